import { describe, expect, it } from 'vitest';
import { readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

describe('the moderation circuit breaker', () => {
  it('counts submissions still unanswered as possibly blocked: with 10 in flight, the key never collects more blocks than --max-blocked', async () => {
    // Slow answers and a fast rate keep 10 submissions on the wire at once.
    const t = await startTestSim({ timeScale: 600, latencyMs: [150, 150], limits: { submissionsPerWindow: 5_000 } });
    const items = Array.from({ length: 40 }, (_, i) => `  - { id: bad-${i}, prompt: "bad ${i} [sim:block]" }`).join(
      '\n',
    );
    const ws = workspace(t.sim, `version: 1\ndefaults: { model: studio-lite }\nitems:\n${items}\n`);
    const res = await ws.run(['--submit-rate', '5000/60s', '--max-blocked', '29']);
    expect(res.code, res.stdout).toBe(3);
    expect(res.stdout).toMatch(/blocked by moderation/);
    const blocked = t.sim.service.ledger.of('request').filter((r) => r.status === 422);
    expect(blocked.length).toBeLessThanOrEqual(29);
    expect(blocked.length).toBeGreaterThanOrEqual(20); // it went on while it was safe to
    expect(readState(ws.statePath).items.filter((i) => i.state === 'blocked')).toHaveLength(blocked.length);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });
});
