import { describe, expect, it } from 'vitest';
import { expectNoDoubleChargeAndVerifiedOutputs, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

// Limits far above a key's, so a few hundred jobs run in seconds; the flags say the same.
const FAST = {
  limits: { submissionsPerWindow: 5_000, uploadGrantsPerWindow: 5_000, readsPerWindow: 100_000, imagesInFlight: 100 },
};
const FAST_FLAGS = [
  '--submit-rate',
  '5000/60s',
  '--upload-rate',
  '5000/60s',
  '--read-rate',
  '100000/60s',
  '--max-images-in-flight',
  '100',
];

describe('the feeder: ready items in manifest order, however many wait', () => {
  it('510 edits listed before the image they edit still run, once it is done', { timeout: 120_000 }, async () => {
    const t = await startTestSim({ timeScale: 600, ...FAST });
    const edits = Array.from(
      { length: 510 },
      (_, i) => `  - { id: edit-${i}, model: studio-edit, prompt: "variant ${i}", inputs: [{ from: base }] }`,
    ).join('\n');
    const ws = workspace(
      t.sim,
      `version: 1\nitems:\n${edits}\n  - { id: base, model: studio-lite, prompt: "the base image" }\n`,
    );
    const res = await ws.run(FAST_FLAGS);
    expect(res.code, res.stdout.slice(-2000)).toBe(0);
    const items = readState(ws.statePath).items;
    expect(items.filter((i) => i.state === 'done')).toHaveLength(511);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(511);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('dependents of an item that failed are skipped, and theirs in turn, wherever they stand in the manifest', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(
      t.sim,
      `version: 1
items:
  - { id: grandchild, model: studio-edit, prompt: "edit of the edit", inputs: [{ from: child }] }
  - { id: child, model: studio-edit, prompt: "edit", inputs: [{ from: root }] }
  - { id: root, model: studio-lite, prompt: "doomed [sim:fail]" }
  - { id: free, model: studio-lite, prompt: "independent" }
`,
    );
    const res = await ws.run(['--max-retries', '0']);
    expect(res.code).toBe(1);
    const states = Object.fromEntries(readState(ws.statePath).items.map((i) => [i.id, [i.state, i.error_code]]));
    expect(states).toEqual({
      grandchild: ['skipped', 'DEPENDENCY_FAILED'],
      child: ['skipped', 'DEPENDENCY_FAILED'],
      root: ['failed', 'GENERATION_FAILED'],
      free: ['done', null],
    });
    expect(
      t.sim.service.ledger
        .of('charge')
        .map((c) => c.prompt)
        .sort(),
    ).toEqual(['doomed [sim:fail]', 'independent']);
  });
});
