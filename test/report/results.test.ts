import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

describe('results export', () => {
  it('every run writes results.jsonl and results.csv, one row per item, matching the state; report rewrites them from the state alone', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(
      t.sim,
      'version: 1\ndefaults: { model: studio-lite }\nitems:\n  - { id: good, prompt: "a mug, \\"quoted\\", with commas" }\n  - { id: bad, prompt: "x [sim:fail]" }\n',
    );
    const res = await ws.run(['--max-retries', '1']);
    expect(res.code).toBe(1);
    expect(res.stdout).toMatch(/results: .*results\.jsonl, .*results\.csv/);
    const rows = readFileSync(join(ws.outDir, 'results.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const state = readState(ws.statePath);
    expect(rows.map((r) => [r.id, r.state])).toEqual(state.items.map((i) => [i.id, i.state]));
    const good = rows[0];
    const out = state.outputs.find((o) => o.item_id === 'good')!;
    expect(good).toMatchObject({
      type: 'image',
      model: 'studio-lite',
      prompt: 'a mug, "quoted", with commas',
      files: [{ path: out.path, bytes: out.bytes, sha256: out.sha256 }],
      creditsCharged: 2,
      creditsRefunded: 0,
      errorCode: null,
    });
    expect(good.jobIds).toEqual([out.job_id]);
    expect(rows[1]).toMatchObject({
      id: 'bad',
      state: 'failed',
      creditsCharged: 4,
      creditsRefunded: 4,
      errorCode: 'GENERATION_FAILED',
      files: [],
    });
    expect(rows[1].jobIds).toHaveLength(2);
    const csv = parse(readFileSync(join(ws.outDir, 'results.csv')), { columns: true }) as Record<string, string>[];
    expect(csv.map((r) => [r.id, r.state, r.prompt, r.files, r.sha256, r.credits_charged, r.error_code])).toEqual([
      ['good', 'done', 'a mug, "quoted", with commas', out.path, out.sha256, '2', ''],
      ['bad', 'failed', 'x [sim:fail]', '', '', '4', 'GENERATION_FAILED'],
    ]);
    rmSync(join(ws.outDir, 'results.jsonl'));
    const requests = t.sim.service.ledger.of('request').length;
    const report = await runCliInProcess(['report', 'm.yaml'], ws.env, ws.dir);
    expect(report.code).toBe(0);
    expect(report.stdout).toMatch(/^2 items written to/);
    expect(
      readFileSync(join(ws.outDir, 'results.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual(rows);
    expect(t.sim.service.ledger.of('request').length).toBe(requests);
  });
});

describe('metadata sidecars', () => {
  it('--sidecars puts <output>.json beside each output with its row and file; failed items have none; report --sidecars rewrites them', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(
      t.sim,
      'version: 1\ndefaults: { model: studio-lite }\nitems:\n  - { id: a, prompt: "first" }\n  - { id: b, prompt: "second" }\n  - { id: bad, prompt: "x [sim:fail]" }\n',
    );
    const res = await ws.run(['--max-retries', '0', '--sidecars']);
    expect(res.code).toBe(1);
    expect(res.stdout).toMatch(/sidecars: 2 next to the outputs/);
    const rows = readFileSync(join(ws.outDir, 'results.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const sidecars = readdirSync(ws.outDir)
      .filter((f) => f.endsWith('.png.json'))
      .sort();
    expect(sidecars).toEqual(['a-1.png.json', 'b-1.png.json']);
    for (const row of rows.filter((r) => r.state === 'done')) {
      const file = row.files[0];
      const sidecar = JSON.parse(readFileSync(join(ws.outDir, `${file.path}.json`), 'utf8'));
      expect(sidecar).toEqual({ ...row, file });
      expect(sidecar.file.sha256).toBe(
        createHash('sha256')
          .update(readFileSync(join(ws.outDir, file.path)))
          .digest('hex'),
      );
    }
    rmSync(join(ws.outDir, 'a-1.png.json'));
    const report = await runCliInProcess(['report', 'm.yaml', '--sidecars'], ws.env, ws.dir);
    expect(report.stdout).toMatch(/sidecars: 2 next to the outputs/);
    expect(JSON.parse(readFileSync(join(ws.outDir, 'a-1.png.json'), 'utf8'))).toEqual({
      ...rows[0],
      file: rows[0].files[0],
    });
  });

  it('report finds the output dir the run used (--out) without being told, and --html writes the gallery there', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(
      t.sim,
      'version: 1\ndefaults: { model: studio-lite }\nitems:\n  - { id: a, prompt: "first" }\n',
    );
    expect((await ws.run(['--out', 'elsewhere'])).code).toBe(0);
    rmSync(join(ws.dir, 'elsewhere', 'index.html'));
    const report = await runCliInProcess(['report', 'm.yaml', '--html'], ws.env, ws.dir);
    expect(report.stdout).toContain(`gallery: ${join(ws.dir, 'elsewhere', 'index.html')}`);
    expect(readFileSync(join(ws.dir, 'elsewhere', 'index.html'), 'utf8')).toContain('"files":["a-1.png"]');
  });
});

describe('a report that cannot be written', () => {
  it('ends the run with exit 4 (the results are owed like outputs); report, or the same command, writes them later', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(
      t.sim,
      'version: 1\ndefaults: { model: studio-lite }\nitems:\n  - { id: a, prompt: "first" }\n',
    );
    // A directory where the gallery goes: its rename fails.
    mkdirSync(join(ws.outDir, 'index.html'), { recursive: true });
    const res = await ws.run();
    expect(res.code).toBe(4);
    expect(res.stdout).toMatch(/done 1\/1/);
    expect(res.stdout).toMatch(
      /the results could not be written \(.*index\.html.*\); the same command \(or genbatch report\) writes them from the state once that is fixed/,
    );
    expect(readdirSync(ws.outDir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    rmSync(join(ws.outDir, 'index.html'), { recursive: true });
    expect((await runCliInProcess(['report', 'm.yaml', '--html'], ws.env, ws.dir)).code).toBe(0);
    expect(readFileSync(join(ws.outDir, 'index.html'), 'utf8')).toContain('"id":"a"');
    // The same command pays nothing and ends 0 once they are written.
    expect((await ws.run()).code).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(1);
  });
});

describe("the manifest's own columns in the results", () => {
  it("results.csv and results.jsonl carry each item's row columns and matrix values; one named like a results column gets var_", async () => {
    const t = await startTestSim({ timeScale: 600 });
    const manifest =
      'version: 1\ndefaults: { model: studio-lite }\nitems:\n  - rows: products.csv\n    id: "{{sku}}-{{scene}}"\n    prompt: "{{title}}, {{scene}}"\n    matrix: { scene: [studio, kitchen] }\n  - { id: plain, prompt: "a bowl" }\n';
    const ws = workspace(t.sim, manifest, { 'products.csv': 'sku,title,state\nmug-1,"Red mug, glazed",new\n' });
    expect((await ws.run()).code).toBe(0);
    const rows = readFileSync(join(ws.outDir, 'results.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.map((r) => [r.id, r.values])).toEqual([
      ['mug-1-studio', { sku: 'mug-1', title: 'Red mug, glazed', state: 'new', scene: 'studio' }],
      ['mug-1-kitchen', { sku: 'mug-1', title: 'Red mug, glazed', state: 'new', scene: 'kitchen' }],
      ['plain', {}],
    ]);
    const csv = parse(readFileSync(join(ws.outDir, 'results.csv')), { columns: true }) as Record<string, string>[];
    expect(csv.map((r) => [r.id, r.state, r.sku, r.title, r.var_state, r.scene])).toEqual([
      ['mug-1-studio', 'done', 'mug-1', 'Red mug, glazed', 'new', 'studio'],
      ['mug-1-kitchen', 'done', 'mug-1', 'Red mug, glazed', 'new', 'kitchen'],
      ['plain', 'done', '', '', '', ''],
    ]);
  });
});
