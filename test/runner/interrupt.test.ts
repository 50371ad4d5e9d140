import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

/** Resolves once the simulator has charged `n` jobs. */
function charged(t: Awaited<ReturnType<typeof startTestSim>>, n: number): Promise<void> {
  return new Promise((resolve) => {
    const check = () => t.sim.service.ledger.of('charge').length >= n;
    if (check()) return resolve();
    const unwatch = t.sim.service.ledger.watch(() => {
      if (check()) {
        unwatch();
        resolve();
      }
    });
  });
}

describe('an interrupt at the real pace', () => {
  it('the first Ctrl-C says so at once and exits 130 within 2 s with items waiting for slots and polls on the wire; every charge is in the state and a rerun pays none again', async () => {
    // The key's real pace and the simulator's real time: 8 slots, 10 items, jobs of 4 s.
    const t = await startTestSim({ timeScale: 1, imageSeconds: [4, 4] });
    const ws = workspace(t.sim, imageManifest(10), {}, 1);
    const run = ws.start(['--max-images-in-flight', '8']);
    run.child.stdout!.setEncoding('utf8');
    await charged(t, 8);
    const sent = Date.now();
    run.child.kill('SIGINT');
    await run.waitFor(/stopping/i);
    const saidAfter = Date.now() - sent;
    const [code] = (await once(run.child, 'exit')) as [number | null];
    const exitedAfter = Date.now() - sent;
    expect(code, run.output()).toBe(130);
    expect(saidAfter).toBeLessThan(1_000);
    expect(exitedAfter).toBeLessThan(2_000);
    expect(run.output()).toMatch(/again to exit now/i);

    const charges = t.sim.service.ledger.of('charge');
    expect(charges).toHaveLength(8);
    const known = new Set(readState(ws.statePath).attempts.map((a) => a.idempotency_key));
    for (const c of charges) expect(known.has(c.idempotencyKey)).toBe(true);

    const again = await ws.run(['--max-images-in-flight', '8']);
    expect(again.code, again.stdout).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(10);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('while the service swallows requests (a black hole), the requests on the wire are given up after a second: exit 130 within 2 s', async () => {
    // At the real pace: from the 3rd charge on, every request is read and none answered (its answer swallowed too).
    const t = await startTestSim({
      timeScale: 1,
      imageSeconds: [4, 4],
      outages: [{ atCharge: 3, seconds: 30, mode: 'blackhole' }],
    });
    const ws = workspace(t.sim, imageManifest(6), {}, 1);
    const run = ws.start();
    await charged(t, 3);
    const sent = Date.now();
    run.child.kill('SIGINT');
    const [code] = (await once(run.child, 'exit')) as [number | null];
    expect(Date.now() - sent).toBeLessThan(2_000);
    expect(code, run.output()).toBe(130);
    // The 3rd submission's answer was swallowed: its key is in the state, for the next run to resend.
    const known = new Set(readState(ws.statePath).attempts.map((a) => a.idempotency_key));
    for (const c of t.sim.service.ledger.of('charge')) expect(known.has(c.idempotencyKey)).toBe(true);
  });

  it('submissions waiting for the rate limit are cancelled, not drained: exit 130 within 2 s with 2 of 12 queued for a minute', async () => {
    // A key allowed 12 images in flight (its /me says so), still 10 submissions a minute.
    const t = await startTestSim({ timeScale: 1, imageSeconds: [60, 60], limits: { imagesInFlight: 12 } });
    const ws = workspace(t.sim, imageManifest(12), {}, 1);
    const run = ws.start(['--max-images-in-flight', '12']);
    await charged(t, 10);
    const sent = Date.now();
    run.child.kill('SIGINT');
    const [code] = (await once(run.child, 'exit')) as [number | null];
    expect(Date.now() - sent).toBeLessThan(2_000);
    expect(code, run.output()).toBe(130);
    const posts = t.sim.service.ledger.of('request').filter((r) => r.method === 'POST');
    expect(posts).toHaveLength(10);
    const state = readState(ws.statePath);
    expect(state.attempts.filter((a) => a.job_id)).toHaveLength(10);
    // The two never sent are queued, their attempts committed and unsent: a rerun sends those keys.
    expect(state.items.filter((i) => i.state === 'queued')).toHaveLength(2);
    expect(state.attempts.filter((a) => !a.job_id).map((a) => a.status)).toEqual(['created', 'created']);
    // status tells them apart: queued is not in flight.
    const status = JSON.parse((await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir)).stdout) as {
      items: Record<string, number>;
      inFlight: number;
    };
    expect(status.items).toMatchObject({ queued: 2, submitting: 0, running: 10 });
    expect(status.inFlight).toBe(10);
  });

  it('a second Ctrl-C exits at once and says so, while a submission is still on the wire', async () => {
    // Once the catalog is read, every request takes 5 s: the first Ctrl-C waits for the submission's answer, the second does not.
    const t = await startTestSim({ timeScale: 1 });
    const unwatch = t.sim.service.ledger.watch((e) => {
      if (e.kind === 'request' && e.path.startsWith('/models')) t.sim.service.options.latencyMs = [5_000, 5_000];
    });
    const ws = workspace(t.sim, imageManifest(1), {}, 1);
    const run = ws.start();
    await waitUntil(() => t.sim.service.submissions.idempotency.inFlight > 0);
    unwatch();
    run.child.kill('SIGINT');
    await run.waitFor(/stopping/i);
    const second = Date.now();
    run.child.kill('SIGINT');
    const [code] = (await once(run.child, 'exit')) as [number | null];
    expect(Date.now() - second).toBeLessThan(1_000);
    expect(code).toBe(130);
    expect(run.output()).toMatch(/exiting now/i);
    // The attempt was committed before it left: a rerun resends its key, never a new one.
    expect(readState(ws.statePath).attempts).toHaveLength(1);
  });
});

/** Resolves once `check` holds, looked at every 10 ms. */
async function waitUntil(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 10));
}

describe('signals from the first instant', () => {
  it('a SIGTERM while the run is still starting (asking the service about its key) exits 130 and sends nothing', async () => {
    const t = await startTestSim({ timeScale: 60 });
    const ws = workspace(t.sim, imageManifest(5), {}, 60);
    let run: ReturnType<typeof ws.start> | undefined;
    // Sent the moment the service sees the key's /me: long before the first submission, while the manifest is read.
    t.sim.service.inject = (req) => {
      if (req.path === '/me') run?.child.kill('SIGTERM');
      return undefined;
    };
    run = ws.start();
    const [code, signal] = (await once(run.child, 'exit')) as [number | null, string | null];
    t.sim.service.inject = undefined;
    expect(signal).toBeNull();
    expect(code, run.output()).toBe(130);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
    // The same command then runs it all.
    expect((await ws.run()).code).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(5);
  });
});
