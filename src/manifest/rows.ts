import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import type { IssueList } from './issues.js';
import { PlainCsvReader } from './plain-csv.js';

import type { Row } from './row.js';

export type { Row };

/**
 * The rows files' bytes, each read once and kept: a run expands its rows a
 * second time as it writes them into the state (it does not hold 100,000
 * items meanwhile), and that second expansion must read the very bytes the
 * first one checked, whatever happened to the file in between.
 */
export class RowsFiles {
  private readonly bytes = new Map<string, Promise<Buffer>>();

  /** `read`: files already read (for the sources' fingerprint), taken as they are. */
  constructor(read?: ReadonlyMap<string, Buffer>) {
    for (const [path, bytes] of read ?? []) this.bytes.set(path, Promise.resolve(bytes));
  }

  read(absPath: string): Promise<Buffer> {
    let bytes = this.bytes.get(absPath);
    if (!bytes) {
      bytes = readFile(absPath);
      // Kept even when it fails: the second expansion meets the same failure (and none follows a failed check).
      bytes.catch(() => {});
      this.bytes.set(absPath, bytes);
    }
    return bytes;
  }
}

/** How much of a rows file is decoded and parsed at a time. */
const CHUNK_BYTES = 256 * 1024;
const FIRST_CHUNK_BYTES = 16 * 1024;

/**
 * The rows of a CSV (with header) or JSONL file, a batch at a time (a catalog
 * has 100,000 rows: one promise per batch, not per row); bad rows become
 * issues, never exceptions.
 */
export async function* readRows(
  absPath: string,
  file: string,
  issues: IssueList,
  files: RowsFiles = new RowsFiles(),
): AsyncGenerator<Row[]> {
  try {
    const bytes = await files.read(absPath);
    if (/\.jsonl$|\.ndjson$/i.test(absPath)) yield* readJsonl(bytes, file, issues);
    else yield* readCsv(bytes, file, issues);
  } catch (error) {
    const e = error as NodeJS.ErrnoException & { lines?: number; index?: number };
    const quote = e.code ? QUOTE_FAULTS[e.code] : undefined;
    const reason = e.code === 'ENOENT' ? 'no such file' : e.code === 'EACCES' ? 'not readable' : e.message;
    issues.add({
      file,
      line: e.lines ?? 1,
      column: 1,
      field: 'rows',
      message: quote
        ? `${quote[0]} (field ${(e.index ?? 0) + 1} of this row): ${quote[1]}`
        : `cannot read the rows: ${reason}`,
    });
  }
}

/** csv-parse's quote faults, said as what the user wrote (a stray quote), with the fix. */
const STRAY: [string, string] = [
  'a stray quote inside a value that is not quoted',
  'write the value in quotes, each quote in it doubled (Tee 15" wide as "Tee 15"" wide")',
];
const QUOTE_FAULTS: Record<string, [string, string]> = {
  INVALID_OPENING_QUOTE: STRAY,
  CSV_INVALID_OPENING_QUOTE: STRAY,
  CSV_INVALID_CLOSING_QUOTE: [
    'a quote inside a quoted value that is not doubled',
    'double each quote inside it ("Tee 15"" wide")',
  ],
  CSV_QUOTE_NOT_CLOSED: [
    'a quoted value that is never closed',
    'end it with a quote (a value holds line breaks only between quotes)',
  ],
};

/** The bytes as text, a chunk of whole lines at a time (a newline byte is never inside a UTF-8 character). */
function* decodedChunks(bytes: Buffer): Generator<string> {
  // A small first chunk: a run writes the first rows into its state, and sends the first of them, before the rest are parsed.
  for (let at = 0, size = FIRST_CHUNK_BYTES; at < bytes.length; size = CHUNK_BYTES) {
    let end = Math.min(at + size, bytes.length);
    if (end < bytes.length) {
      const newline = bytes.lastIndexOf(NEWLINE, end - 1);
      end = newline >= at ? newline + 1 : bytes.indexOf(NEWLINE, end) + 1 || bytes.length;
    }
    yield bytes.toString('utf8', at, end);
    at = end;
  }
}

const NEWLINE = 0x0a;

async function* readCsv(bytes: Buffer, file: string, issues: IssueList): AsyncGenerator<Row[]> {
  const reader = new PlainCsvReader();
  let given = 0;
  for (const chunk of decodedChunks(bytes)) {
    const rows = reader.push(chunk);
    if (!rows) break;
    given += rows.length;
    if (rows.length) yield rows;
  }
  const last = reader.end();
  if (last) {
    if (last.length) yield last;
    return;
  }
  // csv-parse reads the file from its start; the rows the fast reader gave are the same ones, and are not given twice.
  yield* skipRows(readCsvWithCsvParse(bytes, file, issues), given);
}

async function* skipRows(batches: AsyncGenerator<Row[]>, count: number): AsyncGenerator<Row[]> {
  let skipped = 0;
  for await (const batch of batches) {
    if (skipped >= count) yield batch;
    else if (skipped + batch.length <= count) skipped += batch.length;
    else {
      yield batch.slice(count - skipped);
      skipped = count;
    }
  }
}

/** The bytes a slice at a time, for a stream that parses them as it goes. */
function* slices(bytes: Buffer): Generator<Buffer> {
  for (let at = 0; at < bytes.length; at += CHUNK_BYTES) yield bytes.subarray(at, at + CHUNK_BYTES);
}

export async function* readCsvWithCsvParse(bytes: Buffer, file = '', issues?: IssueList): AsyncGenerator<Row[]> {
  const { LineTaggedParser } = await import('./csv-parser.js'); // only a file the fast reader leaves needs csv-parse: not loaded at start
  const source = Readable.from(slices(bytes), { objectMode: false });
  const parser = source.pipe(
    new LineTaggedParser({
      bom: true,
      skip_empty_lines: true,
      relax_quotes: false,
      // Ragged rows are set aside by the parser, each said below with its line.
      relax_column_count: true,
    }),
  );
  // pipe() leaves its source running when the parser stops on an error: end it with the parser.
  parser.once('close', () => source.destroy());
  try {
    yield* batches(parser);
  } finally {
    const columns = parser.header ?? [];
    for (const { line, found } of parser.ragged)
      issues?.add({
        file,
        line,
        column: 1,
        field: 'rows',
        message: `this row has ${found} field${found === 1 ? '' : 's'}, the header ${columns.length} (${columns.join(', ')}): give each row one value per column (quote a value that holds a comma)`,
      });
  }
}

/**
 * What a readable in object mode holds, a batch each time: it is read until
 * empty, and only then waited on (read() returning null arms its next
 * 'readable'). Its error is thrown here; an early return destroys it.
 */
async function* batches<T>(stream: Readable): AsyncGenerator<T[]> {
  let failure: unknown;
  let ended = false;
  const onError = (error: unknown) => (failure ??= error);
  stream.on('error', onError);
  stream.once('end', () => (ended = true));
  try {
    for (;;) {
      const batch: T[] = [];
      for (let record: T | null; (record = stream.read() as T | null) !== null; ) batch.push(record);
      if (batch.length) {
        yield batch;
        continue;
      }
      if (failure !== undefined) throw failure;
      if (ended || stream.readableEnded) return;
      if (stream.destroyed) throw new Error('the rows file closed before its end');
      await new Promise<void>((resolve) => {
        const wake = () => {
          stream.off('readable', wake).off('end', wake).off('close', wake).off('error', wake);
          resolve();
        };
        stream.on('readable', wake).on('end', wake).on('close', wake).on('error', wake);
      });
    }
  } finally {
    stream.off('error', onError);
    if (!stream.destroyed && !ended) stream.destroy();
  }
}

async function* readJsonl(bytes: Buffer, file: string, issues: IssueList): AsyncGenerator<Row[]> {
  const lines = createInterface({ input: Readable.from(slices(bytes), { objectMode: false }), crlfDelay: Infinity });
  let line = 0;
  for await (const text of lines) {
    line++;
    if (text.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      issues.add({
        file,
        line,
        column: 1,
        field: `row ${line}`,
        message: 'expected a JSON object on this line, found text that is not JSON',
      });
      continue;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      issues.add({
        file,
        line,
        column: 1,
        field: `row ${line}`,
        message: `expected a JSON object, found ${Array.isArray(parsed) ? 'an array' : typeof parsed}`,
      });
      continue;
    }
    const fields: Record<string, string> = {};
    let ok = true;
    for (const [key, value] of Object.entries(parsed)) {
      if (value === null || typeof value === 'object') {
        issues.add({
          file,
          line,
          column: 1,
          field: `row ${line}: ${key}`,
          message: 'expected a string, number or boolean',
        });
        ok = false;
      } else fields[key] = String(value);
    }
    if (ok) yield [{ line, fields }];
  }
}
