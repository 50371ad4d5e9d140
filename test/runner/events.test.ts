import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../src/runner/index.js';
import { runInProcess } from '../helpers/in-process.js';
import { imageManifest, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

describe("a run's events", () => {
  it('reach every listener: each item submitted, accepted, polled, ended, downloaded and done, in that order; every answer and 429 with its key', async () => {
    const t = await startTestSim({ timeScale: 600, latencyMs: [0, 2] });
    const ws = workspace(t.sim, imageManifest(14));
    // The 3rd and 5th submissions meet a full window: what a 429 says reaches the listeners with the key it came to.
    t.sim.service.inject = (req, seen) =>
      req.method === 'POST' && req.path === '/images' && (seen === 2 || seen === 4)
        ? {
            status: 429,
            headers: { 'retry-after': '0.01' },
            body: { error: { code: 'RATE_LIMITED', message: 'too many submissions' } },
          }
        : undefined;
    const heard: RunEvent[] = [];
    const alsoHeard: RunEvent[] = [];
    const summary = await runInProcess(t, ws, {
      listen: (runner) => {
        runner.events.on((e) => heard.push(e));
        runner.events.on(() => {
          throw new Error('a listener with a bug');
        });
        runner.events.on((e) => alsoHeard.push(e));
      },
    });
    expect(summary.counts.done).toBe(14);
    expect(alsoHeard).toEqual(heard);

    const lifeOf = (id: string) =>
      heard
        .filter((e) => 'itemId' in e && e.itemId === id)
        .map((e) => e.kind)
        .filter((kind, i, all) => kind !== all[i - 1]);
    for (let i = 0; i < 14; i++) {
      const life = lifeOf(`item-${i}`);
      // A submission refused by a 429 is submitted again: the life is read from its last submission.
      expect(life.slice(life.lastIndexOf('submitted'))).toEqual([
        'submitted',
        'accepted',
        'polled',
        'job-ended',
        'downloaded',
        'item-final',
      ]);
    }
    const downloaded = heard.filter((e) => e.kind === 'downloaded');
    expect(downloaded).toHaveLength(14);
    for (const d of downloaded) expect(d.bytes).toBeGreaterThan(0);

    const answers = heard.filter((e) => e.kind === 'answer');
    expect(answers.every((a) => a.keyFp === 'fp-test')).toBe(true);
    expect(answers.filter((a) => a.limit === 'submit' && a.status === 202).length).toBe(14);
    const limited = heard.filter((e) => e.kind === 'rate-limited');
    expect(limited.map(({ keyFp, limit, code, retryAfterMs }) => ({ keyFp, limit, code, retryAfterMs }))).toEqual([
      { keyFp: 'fp-test', limit: 'submit', code: 'RATE_LIMITED', retryAfterMs: 10 },
      { keyFp: 'fp-test', limit: 'submit', code: 'RATE_LIMITED', retryAfterMs: 10 },
    ]);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(2);
  });
});
