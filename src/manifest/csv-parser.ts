import { Parser } from 'csv-parse';
import type { Row } from './row.js';

/** A row whose field count is not the header's: said by its line, never taken. */
export interface RaggedRow {
  line: number;
  found: number;
}

/**
 * csv-parse's stream with each record tagged with its line as it is parsed,
 * mapped to the header's (trimmed) names here rather than by csv-parse: a row
 * with more or fewer fields than the header is set aside with its line (all of
 * them, not only the first), instead of ending the file there.
 * (Its on_record option would build two info objects per record for the line.)
 */
export class LineTaggedParser extends Parser {
  header: string[] | undefined;
  readonly ragged: RaggedRow[] = [];

  override push(record: unknown, encoding?: BufferEncoding): boolean {
    if (record === null) return super.push(null, encoding);
    const fields = record as string[];
    if (!this.header) {
      this.header = fields.map((h) => h.trim());
      return true;
    }
    if (fields.length !== this.header.length) {
      this.ragged.push({ line: this.info.lines, found: fields.length });
      return true;
    }
    const named: Record<string, string> = {};
    // Own properties whatever the name (`__proto__` included), as the columns' values.
    for (const [i, name] of this.header.entries())
      Object.defineProperty(named, name, { value: fields[i]!, enumerable: true, writable: true, configurable: true });
    return super.push({ line: this.info.lines, fields: named } satisfies Row);
  }
}
