import { open } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { parse } from 'csv-parse';
import type { IssueList } from './issues.js';

export interface Row {
  /** 1-based line in the rows file. */
  line: number;
  values: Map<string, string>;
  /** The same columns as one object: the parser's own record, carried to the results as it is. */
  fields: Record<string, string>;
}

/** Streams the rows of a CSV (with header) or JSONL file; bad rows become issues, never exceptions. */
export async function* readRows(absPath: string, file: string, issues: IssueList): AsyncGenerator<Row> {
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
async function* readCsv(absPath: string): AsyncGenerator<Row> {
  const handle = await open(absPath);
  // Each record becomes its Row in the parser (the line from its context): no per-record info object, no second copy.
  const parser = handle.createReadStream().pipe(
    parse({
      columns: (header: string[]) => header.map((h) => h.trim()),
      bom: true,
      skip_empty_lines: true,
      relax_quotes: false,
      on_record: (record: Record<string, string>, context: { lines: number }): Row => ({ line: context.lines, values: new Map(Object.entries(record)), fields: record }),
    }),
  );
  yield* parser as AsyncIterable<Row>;
}

async function* readJsonl(absPath: string, file: string, issues: IssueList): AsyncGenerator<Row> {
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
    const values = new Map<string, string>();
    let ok = true;
    for (const [key, value] of Object.entries(parsed)) {
      if (value === null || typeof value === 'object') {
        issues.add({ file, line, column: 1, field: `row ${line}: ${key}`, message: 'expected a string, number or boolean' });
        ok = false;
      } else values.set(key, String(value));
    }
    if (ok) yield { line, values, fields: Object.fromEntries(values) };
  }
}
