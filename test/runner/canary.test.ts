import { describe, expect, it } from 'vitest';
import { readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

/** 8 items over two models, in manifest order; `mark` adds a simulator marker to some prompts. */
const manifest = (mark: (i: number) => string = () => '') =>
  `version: 1\nitems:\n${Array.from({ length: 8 }, (_, i) => `  - { id: i${i}, model: ${i % 4 < 2 ? 'studio-lite' : 'studio-xl'}, prompt: "product ${i}${mark(i)}" }\n`).join('')}`;

describe('run --canary', () => {
  it('a failing canary stops with exit 3 after paying only for its own items, says what failed and what it cost; run again, it is judged again and nothing more is paid', async () => {
    const t = await startTestSim({ timeScale: 600 });
    // The canary takes the first item of each model: i0 (studio-lite) and i2 (studio-xl); i2 is blocked.
    const ws = workspace(
      t.sim,
      manifest((i) => (i === 2 ? ' [sim:block]' : '')),
    );
    const res = await ws.run(['--canary', '2']);
    expect(res.code).toBe(3);
    expect(res.stderr).toMatch(/canary: 2 items first \(studio-lite, studio-xl\): i0, i2;/);
    expect(res.stdout).toMatch(
      /the canary failed: 1 of 2 items failed or were blocked \(at most 0 allowed\)\. It cost 2 credits/,
    );
    expect(res.stdout).toMatch(/i2 blocked/);
    const charges = t.sim.service.ledger.of('charge');
    expect(charges.map((c) => c.prompt)).toEqual(['product 0']);
    const states = Object.fromEntries(readState(ws.statePath).items.map((i) => [i.id, i.state]));
    expect(states).toMatchObject({ i0: 'done', i2: 'blocked', i1: 'pending', i7: 'pending' });

    const again = await ws.run(['--canary', '2']);
    expect(again.code).toBe(3);
    expect(again.stdout).toMatch(/the canary failed/);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(1);
    expect(t.sim.service.ledger.of('request').filter((r) => r.method === 'POST')).toHaveLength(2);

    // Allowing one failure, the same canary passes and the rest run.
    const allowed = await ws.run(['--canary', '2', '--canary-max-failures', '1']);
    expect(allowed.stderr).toMatch(/canary passed \(1 of 2 failed/);
    expect(allowed.code).toBe(1);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(7);
  });

  it('a passing canary (a percentage) goes on with the rest after its items finished, and a resumed run does not repeat it', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, manifest());
    // A budget just above the canary's 2 + 8 credits: the run stops soon after it, and the resume goes on without a canary.
    const first = await ws.run(['--canary', '25%', '--max-credits', '14']);
    expect(first.stderr).toMatch(/canary: 2 items first/);
    expect(first.stderr).toMatch(/canary passed/);
    expect(first.code).toBe(3);
    const resumed = await ws.run(['--canary', '25%']);
    expect(resumed.code).toBe(0);
    expect(`${resumed.stdout}${resumed.stderr}`).not.toMatch(/canary/);
    const charges = t.sim.service.ledger.of('charge');
    expect(charges).toHaveLength(8);
    expect(new Set(charges.map((c) => c.prompt)).size).toBe(8);
    // The canary's two items, one per model, were charged first, and both their outputs were downloaded before any other item was charged.
    expect(
      charges
        .slice(0, 2)
        .map((c) => c.prompt)
        .sort(),
    ).toEqual(['product 0', 'product 2']);
    const canaryDownloaded = Math.max(
      ...t.sim.service.ledger
        .of('download')
        .filter((d) => d.status === 200 && charges.slice(0, 2).some((c) => c.jobId === d.jobId))
        .map((d) => d.at),
    );
    expect(charges[2]!.at).toBeGreaterThanOrEqual(canaryDownloaded);
  });

  describe('on stills and the videos made from them', () => {
    /** Three stills (studio-xl), each turned into a video (motion-2); `mark` adds a simulator marker to an id's prompt. */
    const stillsAndVideos = (mark: (id: string) => string = () => '') =>
      `version: 1\ndefaults: { model: studio-xl }\nitems:\n${[1, 2, 3]
        .map(
          (n) =>
            `  - { id: still-${n}, prompt: "product ${n}${mark(`still-${n}`)}" }\n  - { id: spin-${n}, type: video, model: motion-2, duration: 5, resolution: 720p, prompt: "spin ${n}${mark(`spin-${n}`)}", image: { from: still-${n} } }\n`,
        )
        .join('')}`;

    it('a canary of 2 tries one still and the video made from it, before anything else is paid', async () => {
      const t = await startTestSim({ timeScale: 600 });
      const ws = workspace(t.sim, stillsAndVideos());
      const res = await ws.run(['--canary', '2']);
      expect(res.code).toBe(0);
      expect(res.stderr).toMatch(/canary: 2 items first \(studio-xl, motion-2\): still-1, spin-1;/);
      const charges = t.sim.service.ledger.of('charge');
      expect(charges.slice(0, 2).map((c) => c.prompt)).toEqual(['product 1', 'spin 1']);
      expect(charges).toHaveLength(6);
    });

    it('a failed video stops the run after the canary, with nothing else paid', async () => {
      const t = await startTestSim({ timeScale: 600 });
      const ws = workspace(
        t.sim,
        stillsAndVideos((id) => (id === 'spin-1' ? ' [sim:fail]' : '')),
      );
      const res = await ws.run(['--canary', '2']);
      expect(res.code).toBe(3);
      expect(res.stdout).toMatch(/the canary failed: 1 of 2 items failed/);
      expect(res.stdout).toMatch(/spin-1 failed/);
      // The video's failed attempts are retried as any failure is; nothing outside the canary was ever sent.
      expect(new Set(t.sim.service.ledger.of('charge').map((c) => c.prompt))).toEqual(
        new Set(['product 1', 'spin 1 [sim:fail]']),
      );
    });

    it('a failed still stops the run: its video is never sent', async () => {
      const t = await startTestSim({ timeScale: 600 });
      const ws = workspace(
        t.sim,
        stillsAndVideos((id) => (id === 'still-1' ? ' [sim:block]' : '')),
      );
      const res = await ws.run(['--canary', '2']);
      expect(res.code).toBe(3);
      expect(res.stdout).toMatch(/the canary failed/);
      expect(res.stdout).toMatch(/still-1 blocked/);
      expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
    });
  });
});
