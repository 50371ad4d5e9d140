import { once } from 'node:events';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

const json = async (args: string[], env: NodeJS.ProcessEnv, cwd: string) => {
  const res = await runCliInProcess(args, env, cwd);
  expect(res.code, res.stderr).toBe(0);
  return JSON.parse(res.stdout);
};

describe('genbatch status while a run is live, after it is killed, and after it ends', () => {
  it('says whether a run is alive, gives an ETA only while it is, and sums run time over sessions', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(12));
    // Slow submissions keep the run alive long enough to look at it.
    const run = ws.start(['--submit-rate', '1/400ms']);
    await waitForState(ws.statePath, (s) => s.items.filter((i) => i.state === 'done').length >= 4);
    // From now on jobs take an hour of service time: the run stays live, unfinished, until it is killed.
    t.sim.service.options.imageMs = [6_000_000, 6_000_000];
    const live = await json(['status', 'm.yaml', '--json'], ws.env, ws.dir);
    expect(live.run).toMatchObject({ running: true, sessions: 1 });
    expect(live.items.total).toBe(12);
    expect(live.eta.basis).toBe('observed');
    // About 8 items left at one per 400 ms.
    expect(live.eta.seconds).toBeGreaterThanOrEqual(1);
    expect(live.eta.seconds).toBeLessThan(30);
    expect(Date.parse(live.eta.at)).toBeGreaterThan(Date.now() - 5_000);
    const table = await runCliInProcess(['status', 'm.yaml'], ws.env, ws.dir);
    expect(table.stdout).toMatch(/running: \d+ in flight; ETA .* from this run's pace/);

    run.child.kill('SIGKILL');
    await once(run.child, 'exit');
    const killed = await json(['status', 'm.yaml', '--json'], ws.env, ws.dir);
    expect(killed.run).toMatchObject({ running: false, sessions: 1 });
    expect(killed.eta).toBeNull();
    expect(killed.items.done).toBeLessThan(12);
    expect((await runCliInProcess(['status', 'm.yaml'], ws.env, ws.dir)).stdout).toMatch(/not running; last active/);

    // Jobs back to their usual pace, and those submitted meanwhile end now.
    t.sim.service.options.imageMs = [0, 0];
    for (const job of t.sim.service.jobs.byId.values()) job.endsAt = Math.min(job.endsAt, Date.now());

    expect((await ws.run()).code).toBe(0);
    const ended = await json(['status', 'm.yaml', '--json'], ws.env, ws.dir);
    expect(ended.run).toMatchObject({ running: false, sessions: 2, waitingUntil: null });
    expect(ended.run.seconds).toBeGreaterThanOrEqual(1);
    expect(ended.eta).toBeNull();
    expect(ended.items).toMatchObject({ total: 12, done: 12 });
    expect(ended.credits).toEqual({ charged: 24, refunded: 0, net: 24 });
  });

  it('while submissions wait for the daily cap, says until when, and the ETA is no earlier', async () => {
    // At the real pace: the wait lasts until the key day ends at midnight UTC. (At 600x a key day is 144 s, and a run that
    // started within a second of its end saw the wait over before status looked.)
    const t = await startTestSim({ timeScale: 1, imageSeconds: [1, 1] });
    const ws = workspace(t.sim, imageManifest(3), {}, 1);
    // A cap of 2 credits: one studio-lite image a key day.
    const run = ws.start(['--daily-cap', '2']);
    await run.waitFor(/waiting for the daily credit cap until/);
    const waiting = await json(['status', 'm.yaml', '--json'], ws.env, ws.dir);
    expect(waiting.run.running).toBe(true);
    expect(Date.parse(waiting.run.waitingUntil)).toBeGreaterThan(Date.now());
    expect(Date.parse(waiting.eta.at)).toBeGreaterThanOrEqual(Date.parse(waiting.run.waitingUntil));
    run.child.kill('SIGINT');
    await once(run.child, 'exit');
    // Said once for the wait, not once per waiting submission and wake (10,000 items printed 131,000 lines).
    expect(run.output().match(/waiting for the daily credit cap until/g)).toHaveLength(1);
  });

  it('status, report and retry read the state without validating the items: a manifest edited into an invalid one still shows its run', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(2));
    expect((await ws.run()).code).toBe(0);
    // An item with no prompt and a field the schema does not know: validate refuses it, the state is still the state.
    appendFileSync(join(ws.dir, 'm.yaml'), '  - { id: broken, colour: blue }\n');
    expect((await runCliInProcess(['validate', 'm.yaml'], ws.env, ws.dir)).code).toBe(2);
    const status = await json(['status', 'm.yaml', '--json'], ws.env, ws.dir);
    expect(status).toMatchObject({ items: { total: 2, done: 2 } });
    expect((await runCliInProcess(['report', 'm.yaml'], ws.env, ws.dir)).code).toBe(0);
    expect((await runCliInProcess(['retry', 'm.yaml'], ws.env, ws.dir)).stdout).toMatch(/^0 items put back/);
    // A file that is not YAML at all is still a clear usage error.
    writeFileSync(join(ws.dir, 'm.yaml'), 'version: [1\n');
    const broken = await runCliInProcess(['status', 'm.yaml'], ws.env, ws.dir);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/m\.yaml:\d+:\d+/);
  });
});

/** Resolves once the state file shows what `check` wants (read-only, every 20 ms). */
async function waitForState(statePath: string, check: (s: ReturnType<typeof readState>) => boolean): Promise<void> {
  for (;;) {
    try {
      if (check(readState(statePath))) return;
    } catch {
      // Not created yet.
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}
