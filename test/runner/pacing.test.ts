import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../src/api/index.js';
import { imageManifest, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

const posts = (t: Awaited<ReturnType<typeof startTestSim>>) =>
  t.sim.service.ledger.of('request').filter((r) => r.method === 'POST' && r.path === '/images');

describe("pacing at the key's real pace (time scale 1)", () => {
  it("the first window's 10 submissions go at once, not one every 6 s", async () => {
    const t = await startTestSim({ timeScale: 1, imageSeconds: [1, 1] });
    const ws = workspace(t.sim, imageManifest(10), {}, 1);
    const res = await ws.run();
    expect(res.code, res.stdout).toBe(0);
    const sent = posts(t);
    expect(sent).toHaveLength(10);
    expect(t.sim.service.ledger.countStatus(429)).toBe(0);
    // Evenly spaced sends would put 54 s between the first and the last.
    expect(sent.at(-1)!.at - sent[0]!.at).toBeLessThan(6_000);
  });

  it('a key whose limits are half the flags: a 429 pauses every queued submission for its Retry-After, and the run finishes', {
    timeout: 60_000,
  }, async () => {
    // The service allows 3 submissions per 2 s; the runner is told 6, and /me does not say otherwise.
    const t = await startTestSim({
      timeScale: 1,
      imageSeconds: [0.2, 0.2],
      limits: { submissionsPerWindow: 3, windowSeconds: 2 },
      meShowsLimits: false,
    });
    const refusals: { key: string; at: number; until: number }[] = [];
    t.sim.service.tamper = (req, res) => {
      if (req.path === '/images' && res.status === 429) {
        const now = Date.now();
        refusals.push({
          key: String(req.headers['idempotency-key']),
          at: now,
          until: now + (parseRetryAfter(res.headers['Retry-After'], now) ?? 0),
        });
      }
      return undefined;
    };
    const ws = workspace(t.sim, imageManifest(9), {}, 1);
    const res = await ws.run(['--submit-rate', '6/2s']);
    expect(res.code, res.stdout).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(9);
    expect(refusals.length).toBeGreaterThan(0);
    // A refused submission is resent only once its Retry-After has passed: the pause held.
    for (const [i, r] of refusals.entries()) {
      const later = refusals.slice(i + 1).find((x) => x.key === r.key);
      const resent = posts(t).filter((p) => p.idempotencyKey === r.key && p.status !== 429);
      expect(resent, `${r.key} was accepted in the end`).toHaveLength(1);
      const nextTry = Math.min(resent[0]!.at, ...(later ? [later.at] : []));
      expect(nextTry, `${r.key} was resent before its Retry-After ended`).toBeGreaterThanOrEqual(r.until - 5);
    }
    // Nor was anything else: every submission arriving well inside an active Retry-After had left before the 429 came back.
    // (250 ms covers a request already on the wire when the 429 was answered; the pauses here last up to 2 s.)
    for (const r of refusals) {
      const inside = posts(t).filter((p) => p.at > r.at + 250 && p.at < r.until - 5);
      expect(
        inside.map((p) => p.at - r.at),
        `sent inside the Retry-After until ${r.until}`,
      ).toEqual([]);
    }
  });
});
