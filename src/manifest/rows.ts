import { open } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { IssueList } from './issues.js';
import { PlainCsvReader } from './plain-csv.js';

export interface Row {
  /** 1-based line in the rows file. */
  line: number;
  /** The row's columns: the parser's own record, carried to the results as it is. */
  fields: Record<string, string>;
}

/**
 * Streams the rows of a CSV (with header) or JSONL file, a batch at a time
 * (a catalog has 100,000 rows: one promise per batch, not per row); bad rows
 * become issues, never exceptions.
 */
export async function* readRows(absPath: string, file: string, issues: IssueList): AsyncGenerator<Row[]> {
  try {
    if (/\.jsonl$|\.ndjson$/i.test(absPath)) yield* readJsonl(absPath, file, issues);
    else yield* readCsv(absPath);
  } catch (error) {
    const e = error as NodeJS.ErrnoException & { lines?: number };
    const reason = e.code === 'ENOENT' ? 'no such file' : e.code === 'EACCES' ? 'not readable' : e.message;
    issues.add({ file, line: e.lines ?? 1, column: 1, field: 'rows', message: `cannot read the rows: ${reason}` });
  }
}

// The file is opened first, so a missing or unreadable file is a plain rejection, not an unhandled stream error.
async function* readCsv(absPath: string): AsyncGenerator<Row[]> {
  const handle = await open(absPath);
  const reader = new PlainCsvReader();
  let given = 0;
  for await (const chunk of handle.createReadStream({ encoding: 'utf8', highWaterMark: 1 << 20 }) as AsyncIterable<string>) {
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
  yield* skipRows(readCsvWithCsvParse(absPath), given);
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

export async function* readCsvWithCsvParse(absPath: string): AsyncGenerator<Row[]> {
  const handle = await open(absPath);
  const { LineTaggedParser } = await import('./csv-parser.js'); // only a file the fast reader leaves needs csv-parse: not loaded at start
  const file = handle.createReadStream();
  const parser = file.pipe(
    new LineTaggedParser({
      columns: (header: string[]) => header.map((h) => h.trim()),
      bom: true,
      skip_empty_lines: true,
      relax_quotes: false,
    }),
  );
  // pipe() leaves the file open when the parser stops on an error: close it with the parser.
  parser.once('close', () => file.destroy());
  yield* batches(parser);
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

async function* readJsonl(absPath: string, file: string, issues: IssueList): AsyncGenerator<Row[]> {
  const handle = await open(absPath);
  const lines = createInterface({ input: handle.createReadStream(), crlfDelay: Infinity });
  let line = 0;
  for await (const text of lines) {
    line++;
    if (text.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      issues.add({ file, line, column: 1, field: `row ${line}`, message: 'expected a JSON object on this line, found text that is not JSON' });
      continue;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      issues.add({ file, line, column: 1, field: `row ${line}`, message: `expected a JSON object, found ${Array.isArray(parsed) ? 'an array' : typeof parsed}` });
      continue;
    }
    const fields: Record<string, string> = {};
    let ok = true;
    for (const [key, value] of Object.entries(parsed)) {
      if (value === null || typeof value === 'object') {
        issues.add({ file, line, column: 1, field: `row ${line}: ${key}`, message: 'expected a string, number or boolean' });
        ok = false;
      } else fields[key] = String(value);
    }
    if (ok) yield [{ line, fields }];
  }
}
