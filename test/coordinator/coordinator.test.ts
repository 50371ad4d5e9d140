import { once } from 'node:events';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { COORDINATOR_MIGRATIONS } from '../../src/coordinator/migrations.js';
import { Coordinator } from '../../src/coordinator/postgres.js';
import { SharedWindow } from '../../src/coordinator/shared-window.js';
import type { RunningSimulator } from '../../src/simulator/index.js';
import { runCli, runCliInProcess } from '../helpers/cli.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { imageManifest, readState, workspace, type RunWorkspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

let db: TestPostgres;
beforeAll(async () => {
  db = await startPostgres();
}, 60_000);
afterAll(async () => {
  await db?.close();
});

/** Each workspace's manifest has prompts of its own, so each item's charges can be told apart. */
const manifestOf = (name: string, count: number) => imageManifest(count, (i) => `${name} product ${i}`);

function expectEachPromptChargedOnce(sim: RunningSimulator, count: number): void {
  const charges = sim.service.ledger.of('charge');
  expect(charges).toHaveLength(count);
  expect(new Set(charges.map((c) => c.prompt)).size).toBe(count);
}

async function query<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

describe('the coordinator (--coordinator postgres://…)', () => {
  it('creates its schema once, whoever comes first, and opens a migrated database as it is', async () => {
    const [a, b] = await Promise.all([
      Coordinator.open(db.url, { leaseMs: 1000 }),
      Coordinator.open(db.url, { leaseMs: 1000 }),
    ]);
    expect(await a.migrate()).toBe(COORDINATOR_MIGRATIONS.length);
    await Promise.all([a.close(), b.close()]);
    expect(await query('SELECT version FROM genbatch_schema')).toEqual([{ version: COORDINATOR_MIGRATIONS.length }]);
  });

  it('X-RateLimit-Remaining 0 holds every process on the key only when the shared window has room: a full window holds them already', async () => {
    const coordinator = await Coordinator.open(db.url, { leaseMs: 1000 });
    await coordinator.migrate();
    const rate = { count: 2, windowMs: 60_000 };
    const bucketOf = (fp: string) =>
      new SharedWindow(
        coordinator,
        fp,
        'submit',
        rate,
        () => {},
        () => 0,
      );
    const pauses = (fp: string) => query('SELECT until_ms FROM genbatch_pauses WHERE key_fp = $1', [fp]);
    try {
      // Two sends fill the window: the 0 that answers the second one is the window's own.
      const full = bucketOf('remaining-full');
      await full.run(async () => 1);
      await full.run(async () => 2);
      await full.serviceRemaining(0);
      expect(await pauses('remaining-full')).toEqual([]);
      // One send, and the service has nothing left: the key is used outside the coordinator.
      const room = bucketOf('remaining-room');
      await room.run(async () => 1);
      await room.serviceRemaining(0);
      expect(await pauses('remaining-room')).toHaveLength(1);
      // A place taken and never sent (the request found it may not leave) leaves the shared window for every process.
      const back = bucketOf('given-back');
      await back.run(async () => 1);
      await back.run(async (unused) => unused());
      await vi.waitFor(async () =>
        expect(await coordinator.sendsInWindow('given-back', 'submit', rate.windowMs)).toBe(1),
      );
    } finally {
      await coordinator.close();
    }
  });

  it('a submission still unanswered when its key day ends counts on the next day too (it may be charged there), until it is answered', async () => {
    const coordinator = await Coordinator.open(db.url, { leaseMs: 60_000 });
    await coordinator.migrate();
    const fp = 'carried-over';
    try {
      const late = await coordinator.reserveCredits(fp, 5, 2, 8);
      expect(late).toBeDefined();
      // Day 6 begins with day 5's submission on the wire: 6 of its 8 credits are free, not 8.
      expect(await coordinator.reserveCredits(fp, 6, 8, 8)).toBeUndefined();
      expect(await coordinator.reserveCredits(fp, 6, 6, 8)).toBeDefined();
      // Answered on day 6: its charge stays on day 6, and the day is full.
      await coordinator.settleCredits(late!, fp, 6, 2);
      expect(await coordinator.reserveCredits(fp, 6, 1, 8)).toBeUndefined();
      // Another key's day 6 is its own.
      expect(await coordinator.reserveCredits('another-key', 6, 8, 8)).toBeDefined();
    } finally {
      await coordinator.close();
    }
  });

  it('three processes on one key stay within its limits together: every item charged once, not one 429', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const spaces = ['a', 'b', 'c'].map((name) => workspace(t.sim, manifestOf(name, 14)));
    const runs = await Promise.all(spaces.map((ws) => runCli(ws.args(['--coordinator', db.url]), ws.env, ws.dir)));
    for (const res of runs) expect(res.code, res.stdout + res.stderr).toBe(0);
    expectEachPromptChargedOnce(t.sim, 42);
    // Alone, each process would take the key's 10 submissions a window and its 10 images in flight for itself.
    expect(t.sim.service.ledger.countStatus(429)).toBe(0);
    for (const res of runs) expect(res.stdout + res.stderr).not.toContain(db.password);
    // A clean end lets go of every slot and reservation.
    expect(await query('SELECT * FROM genbatch_slots')).toEqual([]);
    expect(await query('SELECT * FROM genbatch_reservations')).toEqual([]);
  });

  it('the key day’s credits are shared: two processes together stay within the cap the key’s /me shows, day after day', async () => {
    // A key day lasts 2 s; the key's cap is 8 credits (4 images). Links live a week of service time (14 s here).
    const t = await startTestSim({
      timeScale: 43_200,
      keys: [{ label: 'main', dailyCap: 8 }],
      linkTtlSeconds: 7 * 86_400,
    });
    const spaces = ['d', 'e'].map((name) => workspace(t.sim, manifestOf(name, 6), {}, 43_200));
    const runs = await Promise.all(spaces.map((ws) => runCli(ws.args(['--coordinator', db.url]), ws.env, ws.dir)));
    for (const res of runs) expect(res.code, res.stdout + res.stderr).toBe(0);
    expectEachPromptChargedOnce(t.sim, 12);
    expect(t.sim.service.ledger.of('request').filter((r) => r.code === 'DAILY_CAP_REACHED')).toEqual([]);
    const perDay = new Map<number, number>();
    for (const c of t.sim.service.ledger.of('charge'))
      perDay.set(Math.floor(c.at / 2000), (perDay.get(Math.floor(c.at / 2000)) ?? 0) + c.credits);
    for (const credits of perDay.values()) expect(credits).toBeLessThanOrEqual(8);
  });

  it('the moderation breaker counts the blocked submissions of every process on the key', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const blocked = workspace(
      t.sim,
      imageManifest(4, (i) => (i < 2 ? `n product ${i} [sim:block]` : `n product ${i}`)),
    );
    const first = await runCliInProcess(
      blocked.args(['--coordinator', db.url, '--max-blocked', '2']),
      blocked.env,
      blocked.dir,
    );
    expect(first.code, first.stdout + first.stderr).toBe(3);
    const charged = t.sim.service.ledger.of('charge').length;
    // Another manifest, another process, clean prompts: the key's 2 blocks in the last 7 days already reach its --max-blocked.
    const clean = workspace(t.sim, manifestOf('o', 3));
    const second = await runCliInProcess(
      clean.args(['--coordinator', db.url, '--max-blocked', '2']),
      clean.env,
      clean.dir,
    );
    expect(second.code, second.stdout + second.stderr).toBe(3);
    expect(second.stdout).toMatch(/2 submissions were blocked by moderation in the last 7 days/);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(charged);
  });

  it('a process killed mid-run frees its in-flight slots once their lease runs out; another then goes on, and a rerun pays nothing twice', async () => {
    // Jobs run 1 s; a lease lasts 2 s at this scale.
    const t = await startTestSim({ timeScale: 600, imageSeconds: [600, 600] });
    const first = workspace(t.sim, manifestOf('k', 10));
    const killed = first.start(['--coordinator', db.url]);
    await expect.poll(() => t.sim.service.ledger.of('charge').length, { timeout: 20_000, interval: 10 }).toBe(10);
    killed.child.kill('SIGKILL');
    await once(killed.child, 'close');
    const held = await query<{ lease_until: string }>("SELECT lease_until FROM genbatch_slots WHERE type = 'image'");
    expect(held).toHaveLength(10);
    // The first of them to lapse frees the first slot.
    const firstLapse = Math.min(...held.map((r) => Number(r.lease_until)));

    const second = workspace(t.sim, manifestOf('l', 5));
    const res = await runCliInProcess(second.args(['--coordinator', db.url]), second.env, second.dir);
    expect(res.code, res.stdout + res.stderr).toBe(0);
    const posts = t.sim.service.ledger.of('request').filter((r) => r.method === 'POST' && r.path.endsWith('/images'));
    const secondsFirst = posts.find((p) =>
      t.sim.service.ledger.of('charge').some((c) => c.idempotencyKey === p.idempotencyKey && c.prompt.startsWith('l ')),
    );
    // Not before the dead process's slots lapsed: the key's 10 images in flight were its, as far as anyone could know.
    expect(secondsFirst!.at).toBeGreaterThanOrEqual(firstLapse);
    expect(t.sim.service.ledger.countStatus(429)).toBe(0);

    const rerun = await runCliInProcess(first.args(['--coordinator', db.url]), first.env, first.dir);
    expect(rerun.code, rerun.stdout + rerun.stderr).toBe(0);
    expect(readState(first.statePath).items.every((i) => i.state === 'done')).toBe(true);
    expectEachPromptChargedOnce(t.sim, 15);
  });

  it('a database that goes away mid-run: submissions wait, saying so, and go on when it is back; nothing paid is lost', async () => {
    const t = await startTestSim({ timeScale: 600, imageSeconds: [300, 300] });
    const ws: RunWorkspace = workspace(t.sim, manifestOf('m', 20));
    const run = ws.start(['--coordinator', db.url]);
    await expect
      .poll(() => t.sim.service.ledger.of('charge').length, { timeout: 20_000, interval: 10 })
      .toBeGreaterThanOrEqual(5);
    await db.stop();
    await run.waitFor(/the coordinator's database.*wait until it answers again/);
    const during = t.sim.service.ledger.of('charge').length;
    await new Promise((r) => setTimeout(r, 500));
    // Nothing new was submitted while the database could not say whether the key had room.
    expect(t.sim.service.ledger.of('charge').length).toBeLessThanOrEqual(during + 1);
    await db.start();
    const [code] = (await once(run.child, 'exit')) as [number | null];
    expect(code, run.output()).toBe(0);
    expect(run.output()).toMatch(/reachable again/);
    expect(run.output()).not.toContain(db.password);
    expectEachPromptChargedOnce(t.sim, 20);
  });

  it('at the real pace, two processes on one key send its first window’s 10 submissions between them, not 10 each', {
    timeout: 30_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 1, imageSeconds: [1, 1] });
    // 12 items each: neither can finish in the first window.
    const spaces = ['p', 'q'].map((name) => workspace(t.sim, manifestOf(name, 12), {}, 1));
    const runs = spaces.map((ws) => ws.start(['--coordinator', db.url]));
    await expect.poll(() => t.sim.service.ledger.of('charge').length, { timeout: 10_000, interval: 20 }).toBe(10);
    // A few seconds more at the key's pace (10 a minute): no 11th submission, no 429.
    await new Promise((r) => setTimeout(r, 3_000));
    const posts = t.sim.service.ledger.of('request').filter((r) => r.method === 'POST');
    expect(posts).toHaveLength(10);
    expect(t.sim.service.ledger.countStatus(429)).toBe(0);
    const exits = runs.map((run) => once(run.child, 'exit'));
    for (const run of runs) run.child.kill('SIGINT');
    expect((await Promise.all(exits)).map(([code]) => code)).toEqual([130, 130]);
  });
});
