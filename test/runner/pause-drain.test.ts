import { once } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import type { LedgerEvent } from '../../src/simulator/index.js';
import { runCliInProcess } from '../helpers/cli.js';
import {
  expectNoDoubleChargeAndVerifiedOutputs,
  imageManifest,
  readState,
  workspace,
  type RunWorkspace,
} from '../helpers/run.js';
import { startTestSim, type TestSim } from '../helpers/sim.js';

type Request = Extract<LedgerEvent, { kind: 'request' }>;
const posts = (t: TestSim) =>
  t.sim.service.ledger.of('request').filter((r): r is Request => r.method === 'POST' && r.path === '/images');

/** Resolves once the simulator has charged `n` jobs. */
function charged(t: TestSim, n: number): Promise<void> {
  return vi.waitFor(() => expect(t.sim.service.ledger.of('charge').length).toBeGreaterThanOrEqual(n), {
    timeout: 20_000,
    interval: 10,
  });
}

/** A second command, as a user types it in another shell. */
const control = (ws: RunWorkspace, command: string, extra: string[] = []) =>
  runCliInProcess([command, 'm.yaml', ...extra], ws.env, ws.dir);

describe('pause, resume and drain from another shell', () => {
  it('pause stops submissions within a second while jobs in flight are polled and downloaded; status says paused since; resume goes on', {
    timeout: 60_000,
  }, async () => {
    // Jobs of a real second: the run is mid-flight when paused.
    const t = await startTestSim({ timeScale: 60, imageSeconds: [60, 60] });
    const ws = workspace(t.sim, imageManifest(24), {}, 60);
    const run = ws.start(['--submit-rate', '4/1s']);
    await charged(t, 4);
    const askedAt = Date.now();
    const paused = await control(ws, 'pause', ['--json']);
    expect(paused.code, paused.stderr).toBe(0);
    const answer = JSON.parse(paused.stdout);
    expect(answer.run).toBe(run.child.pid);
    expect(answer.message).toMatch(/^paused: the run \(pid \d+\) sends nothing new since/);
    const pausedAt = answer.answer.at as number;
    // The run acted within a second of being asked.
    expect(pausedAt - askedAt).toBeLessThanOrEqual(1_000);
    // While paused: nothing new leaves, and what was in flight is downloaded.
    const downloadsBefore = t.sim.service.ledger.of('download').length;
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(posts(t).filter((p) => p.at > pausedAt + 100)).toEqual([]);
    expect(t.sim.service.ledger.of('download').length).toBeGreaterThan(downloadsBefore);
    const status = JSON.parse((await control(ws, 'status', ['--json'])).stdout);
    expect(status.run.pausedSince).not.toBeNull();
    expect(run.output()).toMatch(/paused since/);

    const resumed = await control(ws, 'resume');
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(/^resumed: the run \(pid \d+\) sends again/);
    const [code] = (await once(run.child, 'exit')) as [number];
    expect(code, run.output()).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(24);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('drain: nothing new is sent, what was in flight is finished and downloaded, exit 3 naming what was not sent; a plain run does the rest', {
    timeout: 60_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 60, imageSeconds: [60, 60] });
    const ws = workspace(t.sim, imageManifest(24), {}, 60);
    const run = ws.start(['--submit-rate', '4/1s']);
    await charged(t, 4);
    const drain = await control(ws, 'drain');
    expect(drain.code).toBe(0);
    expect(drain.stdout).toMatch(
      /^draining: the run \(pid \d+\) sends nothing new; it finishes the \d+ jobs? in flight, downloads them, and exits 3/,
    );
    const [code] = (await once(run.child, 'exit')) as [number];
    expect(code, run.output()).toBe(3);
    const state = readState(ws.statePath);
    const sent = new Set(state.attempts.filter((a) => a.job_id).map((a) => a.item_id));
    // Every item sent was finished and downloaded; none of the others was sent.
    for (const item of state.items) {
      if (sent.has(item.id)) expect(item.state, item.id).toBe('done');
      else expect(['pending', 'queued'], item.id).toContain(item.state);
    }
    expect(t.sim.service.ledger.of('charge')).toHaveLength(sent.size);
    const notSent = 24 - sent.size;
    expect(notSent).toBeGreaterThan(0);
    expect(run.output()).toContain(`${notSent} items were not sent`);
    // The drain was that run's: the next one runs everything left.
    const rest = await ws.run();
    expect(rest.code, rest.stderr).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(24);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('a paused state survives a kill and a restart: the new run starts paused, says so, and waits for resume', {
    timeout: 60_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 60 });
    const ws = workspace(t.sim, imageManifest(12), {}, 60);
    const first = ws.start(['--submit-rate', '2/1s']);
    await charged(t, 2);
    expect((await control(ws, 'pause')).code).toBe(0);
    first.child.kill('SIGKILL');
    await once(first.child, 'exit');
    // No run now: pause again is recorded already, drain has nothing to do, status says paused.
    expect((await control(ws, 'pause')).stdout).toMatch(/^already paused since .* \(no run holds this state\)/);
    expect((await control(ws, 'drain')).stdout).toBe('no run holds this state: nothing to drain\n');
    expect((await control(ws, 'status')).stdout).toMatch(/paused since .*: a run started on this state starts paused/);

    const charges = t.sim.service.ledger.of('charge').length;
    const second = ws.start();
    await second.waitFor(/paused since/);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(t.sim.service.ledger.of('charge')).toHaveLength(charges);
    expect((await control(ws, 'resume')).stdout).toMatch(/^resumed: the run/);
    const [code] = (await once(second.child, 'exit')) as [number];
    expect(code, second.output()).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(12);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('with no run: pause is recorded and says so, resume clears it', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(2));
    expect((await ws.run()).code).toBe(0);
    const paused = await control(ws, 'pause');
    expect(paused.stdout).toMatch(/^paused: no run holds this state; recorded, so a run started on it starts paused/);
    expect((await control(ws, 'resume')).stdout).toBe(
      'resumed: no run holds this state; a run started on it goes on\n',
    );
    expect((await control(ws, 'resume')).stdout).toMatch(/^not paused/);
  });

  it('before anything ran: a pause is recorded (the first run starts paused), a resume or a drain has nothing to act on', {
    timeout: 60_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 60 });
    const ws = workspace(t.sim, imageManifest(3), {}, 60);
    expect(await control(ws, 'resume')).toMatchObject({ code: 0, stdout: 'not paused: m.yaml has not run yet\n' });
    expect(await control(ws, 'drain')).toMatchObject({ code: 0, stdout: 'nothing to drain: m.yaml has not run yet\n' });
    const paused = await control(ws, 'pause');
    expect(paused.code).toBe(0);
    expect(paused.stdout).toMatch(/^paused: no run holds this state; recorded, so a run started on it starts paused/);
    // The first run takes the state the pause made: it starts paused and sends nothing until resumed.
    const run = ws.start();
    await run.waitFor(/paused since/);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
    expect((await control(ws, 'resume')).stdout).toMatch(/^resumed: the run/);
    const [code] = (await once(run.child, 'exit')) as [number];
    expect(code, run.output()).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
  });
});
