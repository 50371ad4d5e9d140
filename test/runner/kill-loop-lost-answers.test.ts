import { describe, expect, it } from 'vitest';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, killLoop, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

// Apart from kill-loop.test.ts so the two files run side by side.
describe('killed at any instant while answers are lost, resumed with the same command', () => {
  it('40 images, 10% of answers lost, 8 SIGKILLs: neither the rebuilt windows nor the slots of lost answers meet a 429', {
    timeout: 120_000,
  }, async () => {
    // A submission whose answer was lost may be a job running on the service: it keeps its slot in the run that sent
    // it and in the run that resumes it.
    const t = await startTestSim({ timeScale: 60, seed: 5, dropRate: 0.1 });
    const ws = workspace(t.sim, imageManifest(40), {}, 60);
    const { final } = await killLoop(t.sim, ws, 8);
    expect(final.code, final.stdout + final.stderr).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(40);
    const tooMany = t.sim.service.ledger.of('request').filter((r) => r.status === 429);
    expect(tooMany.map((r) => `${r.code} ${r.method} ${r.path} at ${r.at}`)).toEqual([]);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });
});
