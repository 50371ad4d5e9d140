import { describe, expect, it } from 'vitest';
import { DEFAULT_KEY_LIMITS } from '../../src/scheduler/limits.js';
import { runInProcess } from '../helpers/in-process.js';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

describe('a submission whose answer was lost', () => {
  it('holds its in-flight slot while it waits to be resent: the service, still running its job, never meets one more', async () => {
    // Jobs long enough that all ten slots stay full, and a window wide enough to fill them at once: the service holds
    // ten images in flight, as the run does.
    const t = await startTestSim({ timeScale: 60, imageSeconds: [60, 60], limits: { submissionsPerWindow: 30 } });
    const ws = workspace(t.sim, imageManifest(16), {}, 60);
    // The third submission's job is created and charged, and its answer lost on the way.
    t.sim.service.tamper = (req, response, seen) =>
      req.method === 'POST' && req.path === '/images' && seen === 2 && response.status === 202
        ? { ...response, drop: true }
        : undefined;
    const window = (count: number) => ({ count, windowMs: 1_000 });
    const summary = await runInProcess(t, ws, {
      options: { timeScale: 60 },
      limits: { ...DEFAULT_KEY_LIMITS, submit: window(30), read: window(120), upload: window(30) },
    });
    expect(summary.counts.done).toBe(16);
    const refused = t.sim.service.ledger.of('request').filter((r) => r.status === 429);
    expect(refused.map((r) => r.code)).toEqual([]);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(16);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });
});
