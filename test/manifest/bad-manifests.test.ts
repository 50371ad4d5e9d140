import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { formatIssue, loadManifest } from '../../src/manifest/index.js';
import { runCliInProcess } from '../helpers/cli.js';

const dir = fileURLToPath(new URL('../fixtures/bad/', import.meta.url));
const fixtures = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml'))
  .sort();

/** expected.txt: "== file (count)" then the exact messages, file:line:column: field: message. */
function expectations(): Map<string, { count: number; lines: string[] }> {
  const map = new Map<string, { count: number; lines: string[] }>();
  let current: { count: number; lines: string[] } | undefined;
  for (const line of readFileSync(`${dir}expected.txt`, 'utf8').split('\n')) {
    const head = /^== (\S+) \((\d+)\)$/.exec(line);
    if (head) map.set(head[1]!, (current = { count: Number(head[2]), lines: [] }));
    else if (line.trim()) current!.lines.push(line);
  }
  return map;
}
const expected = expectations();

describe('the bad-manifest corpus', () => {
  it('has at least 25 manifests, each with its expected errors', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(25);
    expect([...expected.keys()].sort()).toEqual(fixtures);
  });

  it.each(fixtures)('%s: every error, located exactly', async (file) => {
    const { issues } = await loadManifest(file, dir);
    const want = expected.get(file)!;
    expect(issues.issues.map(formatIssue)).toEqual(want.lines);
    expect(issues.count).toBe(want.count);
    expect(want.count).toBeGreaterThan(0);
  });

  it('genbatch validate exits 2 on each, printing all its errors', async () => {
    const results = await Promise.all(
      fixtures.map(async (file) => [file, await runCliInProcess(['validate', file], undefined, dir)] as const),
    );
    for (const [file, res] of results) {
      expect(res.code, file).toBe(2);
      for (const line of expected.get(file)!.lines) expect(res.stderr, file).toContain(line);
      expect(res.stdout, file).toBe('');
    }
  });
});
