import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { expectNoDoubleChargeAndVerifiedOutputs, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

describe('an item redone after its prompt changed', () => {
  it('keeps the earlier paid output as version 1 beside the new one, and the results say which is current', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(
      t.sim,
      'version: 1\nitems:\n  - { id: a, model: studio-lite, prompt: "first take" }\n  - { id: b, model: studio-edit, prompt: "edit of a", inputs: [{ from: a }] }\n',
    );
    expect((await ws.run()).code).toBe(0);
    const firstBytes = readFileSync(join(ws.outDir, 'a-1.png'));
    writeFileSync(
      join(ws.dir, 'm.yaml'),
      'version: 1\nitems:\n  - { id: a, model: studio-lite, prompt: "second take, much longer than the first" }\n  - { id: b, model: studio-edit, prompt: "edit of a", inputs: [{ from: a }] }\n',
    );
    expect((await ws.run(['--redo-changed'])).code).toBe(0);
    const state = readState(ws.statePath);
    const [oldJob, newJob] = state.attempts.filter((x) => x.item_id === 'a').map((x) => x.job_id);
    const outputsOfA = state.outputs.filter((o) => o.item_id === 'a');
    expect(outputsOfA.map((o) => [o.job_id, o.path]).sort()).toEqual(
      [
        [oldJob, 'a-1.png'],
        [newJob, 'a-1.v2.png'],
      ].sort(),
    );
    // The paid first take is still on disk, byte for byte.
    expect(readFileSync(join(ws.outDir, 'a-1.png')).equals(firstBytes)).toBe(true);
    const rows = readFileSync(join(ws.outDir, 'results.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const a = rows.find((r) => r.id === 'a');
    expect(a.files.map((f: { path: string }) => f.path)).toEqual(['a-1.v2.png']);
    expect(a.version).toBe(2);
    expect(
      a.versions.map((v: { version: number; current: boolean; files: string[] }) => [v.version, v.current, v.files]),
    ).toEqual([
      [1, false, ['a-1.png']],
      [2, true, ['a-1.v2.png']],
    ]);
    const csv = parse(readFileSync(join(ws.outDir, 'results.csv')), { columns: true }) as Record<string, string>[];
    expect(csv.find((r) => r.id === 'a')).toMatchObject({
      files: 'a-1.v2.png',
      version: '2',
      earlier_files: 'a-1.png',
    });
    const downloads = t.sim.service.ledger.of('download').length;

    // Two more resumes: nothing to download, and both versions keep their bytes.
    expect((await ws.run()).code).toBe(0);
    expect((await ws.run()).code).toBe(0);
    expect(t.sim.service.ledger.of('download')).toHaveLength(downloads);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });
});
