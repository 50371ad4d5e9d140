import type { Row } from './row.js';

/**
 * A fast reader for the CSV files catalogs are made of: one record per line,
 * fields quoted or not, `""` inside quotes, LF or CRLF throughout. It reads
 * 100,000 rows in a tenth of csv-parse's time, which is most of a first
 * start's budget. It answers only where it reads a file exactly as csv-parse
 * does (with the options `rows.ts` gives it); anything else (a newline
 * inside quotes, a stray quote or carriage return, a ragged row, a header it
 * would have to interpret) stops it, and csv-parse reads the file instead,
 * with its own messages for what is wrong.
 */
export class PlainCsvReader {
  private carry = '';
  private columns: string[] | undefined;
  /** Lines consumed so far (the line numbers csv-parse gives a record are those of its last line). */
  private line = 0;
  private crlf: boolean | undefined;
  private started = false;
  /** Set once the file holds something this reader does not read as csv-parse would. */
  private stopped = false;

  /** The rows completed by this chunk, or undefined once the file needs csv-parse. */
  push(chunk: string): Row[] | undefined {
    if (this.stopped) return undefined;
    if (!this.started) {
      this.started = true;
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
    }
    const text = this.carry + chunk;
    const lastNewline = text.lastIndexOf('\n');
    if (lastNewline < 0) {
      this.carry = text;
      return [];
    }
    this.carry = text.slice(lastNewline + 1);
    return this.lines(text, lastNewline);
  }

  /** The last line's row, when the file does not end with a newline. */
  end(): Row[] | undefined {
    if (this.stopped) return undefined;
    const rest = this.carry;
    this.carry = '';
    if (rest === '') return [];
    // A carriage return with no line feed after it is csv-parse's to interpret.
    if (rest.includes('\r')) return this.stop();
    const out: Row[] = [];
    this.line++;
    return this.record(rest, 0, rest.length, out) ? out : this.stop();
  }

  private stop(): undefined {
    this.stopped = true;
    return undefined;
  }

  /** Every line of `text` up to `last` (a newline). */
  private lines(text: string, last: number): Row[] | undefined {
    const out: Row[] = [];
    if (this.crlf === undefined) this.crlf = text.charCodeAt(text.indexOf('\n') - 1) === 13;
    // A lone carriage return (or one in an LF file) is a record delimiter or a field's content to csv-parse: not ours to guess.
    if (!this.crlf) {
      const cr = text.indexOf('\r');
      if (cr >= 0 && cr < last) return this.stop();
    }
    let start = 0;
    while (start <= last) {
      const newline = text.indexOf('\n', start);
      let end = newline;
      if (this.crlf) {
        if (text.charCodeAt(newline - 1) !== 13 || newline === start) return this.stop();
        end = newline - 1;
        if (text.indexOf('\r', start) < end) return this.stop();
      }
      this.line++;
      if (end > start && !this.record(text, start, end, out)) return this.stop();
      // An empty line is skipped (skip_empty_lines), but the header must come first.
      if (end === start && this.columns === undefined) return this.stop();
      start = newline + 1;
    }
    return out;
  }

  /** Reads the line `text[start, end)`; false when it is not a plain record. */
  private record(text: string, start: number, end: number, out: Row[]): boolean {
    const values = splitLine(text, start, end);
    if (!values) return false;
    if (this.columns === undefined) {
      const names = values.map((v) => v.trim());
      // Names csv-parse would treat specially (none, repeated, or the prototype's) are left to it.
      if (names.some((n) => n === '' || n === '__proto__') || new Set(names).size !== names.length) return false;
      this.columns = names;
      return true;
    }
    const columns = this.columns;
    if (values.length !== columns.length) return false;
    const fields: Record<string, string> = {};
    for (let i = 0; i < columns.length; i++) fields[columns[i]!] = values[i]!;
    out.push({ line: this.line, fields });
    return true;
  }
}

const QUOTE = 34;
const COMMA = 44;

/** The fields of one line, or undefined when a quote is anywhere but around a whole field (or left open). */
function splitLine(text: string, start: number, end: number): string[] | undefined {
  const values: string[] = [];
  const firstQuote = text.indexOf('"', start);
  if (firstQuote < 0 || firstQuote >= end) {
    for (let from = start; ; ) {
      const comma = text.indexOf(',', from);
      if (comma < 0 || comma >= end) {
        values.push(text.slice(from, end));
        return values;
      }
      values.push(text.slice(from, comma));
      from = comma + 1;
    }
  }
  for (let from = start; ; ) {
    if (text.charCodeAt(from) === QUOTE) {
      let value = '';
      let at = from + 1;
      for (;;) {
        const quote = text.indexOf('"', at);
        if (quote < 0 || quote >= end) return undefined; // open at the end of the line: a field across lines
        value += text.slice(at, quote);
        if (text.charCodeAt(quote + 1) === QUOTE && quote + 1 < end) {
          value += '"';
          at = quote + 2;
          continue;
        }
        from = quote + 1;
        break;
      }
      values.push(value);
      if (from === end) return values;
      if (text.charCodeAt(from) !== COMMA) return undefined;
      from++;
      continue;
    }
    const comma = text.indexOf(',', from);
    const stop = comma < 0 || comma >= end ? end : comma;
    const quote = text.indexOf('"', from);
    if (quote >= 0 && quote < stop) return undefined;
    values.push(text.slice(from, stop));
    if (stop === end) return values;
    from = stop + 1;
  }
}
