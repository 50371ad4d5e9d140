import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IssueList } from '../../src/manifest/issues.js';
import { PlainCsvReader } from '../../src/manifest/plain-csv.js';
import { readCsvWithCsvParse, readRows, type Row } from '../../src/manifest/rows.js';

const dir = mkdtempSync(join(tmpdir(), 'genbatch-csv-'));
let fileNo = 0;

/** What csv-parse makes of the text: its rows and what it said of ragged ones, or its error. */
async function csvParse(text: string): Promise<{ rows: Row[]; said: string[] } | { error: string }> {
  const rows: Row[] = [];
  const issues = new IssueList();
  try {
    for await (const batch of readCsvWithCsvParse(Buffer.from(text), 'r.csv', issues)) rows.push(...batch);
    return { rows, said: issues.issues.map((i) => i.message) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** The fast reader's rows, fed in the given pieces; undefined when it left the file to csv-parse. */
function fast(pieces: string[]): Row[] | undefined {
  const reader = new PlainCsvReader();
  const rows: Row[] = [];
  for (const piece of pieces) {
    const some = reader.push(piece);
    if (!some) return undefined;
    rows.push(...some);
  }
  const last = reader.end();
  return last && [...rows, ...last];
}

/** The text cut at the given places. */
const cut = (text: string, at: number[]) => {
  const places = [...new Set(at.map((a) => a % (text.length + 1)))].sort((a, b) => a - b);
  return [0, ...places].map((from, i) => text.slice(from, places[i] ?? text.length));
};

const plainCell = fc.oneof(
  fc.string({ unit: fc.constantFrom('a', 'B', ' ', 'é', '語', '😀', '.', '-'), maxLength: 8 }),
  fc.string({ unit: fc.constantFrom('a', ',', '"', ' ', 'é'), maxLength: 8 }).map((s) => `"${s.replace(/"/g, '""')}"`),
);
const anyCell = fc.oneof(
  plainCell,
  fc
    .string({ unit: fc.constantFrom('a', ',', '"', ' ', '\n', '\r', 'é'), maxLength: 8 })
    .map((s) => `"${s.replace(/"/g, '""')}"`),
  fc.string({ unit: fc.constantFrom('a', ',', '"', '\n', '\r', ' '), maxLength: 6 }),
);
const csvOf = (bom: boolean, eol: string, lines: string[], trailing: boolean) =>
  `${bom ? '\ufeff' : ''}${lines.join(eol)}${trailing ? eol : ''}`;

/** Files as catalogs are written: every row as wide as the header, blank lines here and there, LF or CRLF. */
const plainCsv = fc
  .record({
    bom: fc.boolean(),
    eol: fc.constantFrom('\n', '\r\n'),
    header: fc.uniqueArray(fc.constantFrom('sku', 'title', ' color ', 'a', '"q"', 'x y'), {
      minLength: 1,
      maxLength: 4,
      selector: (h) => h.trim().replace(/"/g, ''),
    }),
    rows: fc.array(fc.tuple(fc.array(plainCell, { minLength: 4, maxLength: 4 }), fc.boolean()), { maxLength: 8 }),
    trailing: fc.boolean(),
  })
  .map(({ bom, eol, header, rows, trailing }) =>
    csvOf(
      bom,
      eol,
      [
        header.join(','),
        ...rows.flatMap(([cells, blank]) => [cells.slice(0, header.length).join(','), ...(blank ? [''] : [])]),
      ],
      trailing,
    ),
  );

/** Anything: ragged rows, odd names, quotes and carriage returns anywhere. */
const hostileCsv = fc
  .record({
    bom: fc.boolean(),
    eol: fc.constantFrom('\n', '\r\n', '\r'),
    header: fc.array(fc.oneof(fc.constantFrom('sku', 'title', ' color ', 'a', '__proto__', '', '"q"'), anyCell), {
      minLength: 1,
      maxLength: 4,
    }),
    rows: fc.array(fc.array(anyCell, { minLength: 0, maxLength: 5 }), { maxLength: 8 }),
    trailing: fc.boolean(),
    stray: fc.option(fc.tuple(fc.nat(), fc.constantFrom('\r', '\n', '\r\n', '"', ',')), { nil: undefined }),
  })
  .map(({ bom, eol, header, rows, trailing, stray }) => {
    const text = csvOf(
      bom,
      eol,
      [header, ...rows].map((r) => r.join(',')),
      trailing,
    );
    if (!stray) return text;
    const at = stray[0] % (text.length + 1);
    return text.slice(0, at) + stray[1] + text.slice(at);
  });

const csvText = fc.oneof({ arbitrary: plainCsv, weight: 2 }, { arbitrary: hostileCsv, weight: 2 });

describe('the fast CSV reader', () => {
  it('reads every file it answers for exactly as csv-parse does, and answers for none csv-parse refuses, however the file is cut in chunks', async () => {
    let answered = 0;
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(csvText, fc.array(fc.nat(), { maxLength: 4 }), async (generated, at) => {
        runs++;
        // As a file holds it: a stray character put inside an emoji leaves halves of it that no UTF-8 file can hold
        // (writing them makes U+FFFD), so both readers get the text a file would decode to.
        const text = Buffer.from(generated).toString('utf8');
        const mine = fast(cut(text, at));
        const theirs = await csvParse(text);
        if (mine === undefined) return;
        answered++;
        expect(theirs).toEqual({ rows: mine, said: [] });
      }),
      { numRuns: 600 },
    );
    // The property says nothing if the fast reader hardly ever answers.
    expect(answered).toBeGreaterThan(runs / 3);
  });

  it('reads a catalog as it is usually written: quoted cells with commas and quotes, CRLF, a BOM, blank lines, no final newline', async () => {
    const text = '\ufeffsku, title ,color\r\nA-1,"Mug, large",red\r\n\r\nA-2,"The ""Big"" bowl",\r\nA-3,plain,"blue"';
    const rows = fast(cut(text, [7, 30, 31]));
    expect(rows).toEqual([
      { line: 2, fields: { sku: 'A-1', title: 'Mug, large', color: 'red' } },
      { line: 4, fields: { sku: 'A-2', title: 'The "Big" bowl', color: '' } },
      { line: 5, fields: { sku: 'A-3', title: 'plain', color: 'blue' } },
    ]);
    expect(await csvParse(text)).toEqual({ rows, said: [] });
  });

  it.each([
    ['a quoted cell across lines', 'sku,title\n1,"two\nlines"\n2,x\n'],
    ['a ragged row', 'sku,title\n1,x\n2,x,extra\n'],
    ['a quote inside a cell', 'sku,title\n1,x\n2,a"b\n'],
    ['an LF file with a carriage return', 'sku,title\n1,x\r\n2,y\n'],
  ])(
    'leaves %s to csv-parse, whose rows or error come out of readRows as if it had read the file alone',
    async (_, text) => {
      expect(fast([text])).toBeUndefined();
      const path = join(dir, `${fileNo++}.csv`);
      writeFileSync(path, text);
      const issues = new IssueList();
      const rows: Row[] = [];
      for await (const batch of readRows(path, 'r.csv', issues)) rows.push(...batch);
      const theirs = await csvParse(text);
      if ('rows' in theirs)
        expect({ rows, said: issues.issues.map((i) => i.message) }).toEqual({ rows: theirs.rows, said: theirs.said });
      // Its error (a stray quote, here) is said as what the user wrote, with the fix.
      else
        expect(issues.issues.map((i) => [i.line, i.message])).toEqual([
          [3, expect.stringMatching(/^a stray quote inside a value that is not quoted \(field 2 of this row\): write/)],
        ]);
    },
  );

  it('gives each row once when csv-parse takes over after the fast reader gave a megabyte of rows', async () => {
    const good = Array.from({ length: 60_000 }, (_, i) => `S-${i},"Item ${i}, hand glazed stoneware"`).join('\n');
    const path = join(dir, `${fileNo++}.csv`);
    writeFileSync(path, `sku,title\n${good}\nS-x,"two\nlines"\nS-y,last\n`);
    const rows: Row[] = [];
    for await (const batch of readRows(path, 'r.csv', new IssueList())) rows.push(...batch);
    expect(rows).toHaveLength(60_002);
    expect(new Set(rows.map((r) => r.fields.sku)).size).toBe(60_002);
    expect(rows.at(-2)).toEqual({ line: 60_003, fields: { sku: 'S-x', title: 'two\nlines' } });
    expect(rows.at(-1)).toEqual({ line: 60_004, fields: { sku: 'S-y', title: 'last' } });
  });
});
