import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';
import { runCli, runCliInProcess } from '../helpers/cli.js';

const scaled = { timeScale: 600 };

describe('genbatch run against the simulator', () => {
  it('takes a manifest to verified outputs, within every limit, and a rerun submits nothing', async () => {
    // At 60x the rate window is 1 s: far above a loaded machine's timer noise, as the real 60 s window is.
    const t = await startTestSim({ timeScale: 60 });
    const ws = workspace(t.sim, imageManifest(30), {}, 60);
    const first = await ws.run();
    expect(first.stderr + first.stdout).not.toContain(t.sim.apiKey);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('done 30/30');
    const ledger = t.sim.service.ledger;
    expect(ledger.of('charge')).toHaveLength(30);
    expect(ledger.countStatus(429)).toBe(0);
    expect(readState(ws.statePath).outputs).toHaveLength(30);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
    const requests = ledger.of('request').length;
    const again = await ws.run();
    expect(again.code).toBe(0);
    expect(ledger.of('charge')).toHaveLength(30);
    expect(ledger.of('request').filter((r) => r.path === '/images')).toHaveLength(30);
    expect(ledger.of('request').length - requests).toBeLessThanOrEqual(2); // /models for prices; no submissions, no polls
  });

  it('a response dropped after the job was created: resent with the same key, charged once', async () => {
    const t = await startTestSim({ ...scaled, dropRate: 0.5, seed: 7 });
    const ws = workspace(t.sim, imageManifest(12));
    const res = await ws.run();
    expect(res.code, res.stderr).toBe(0);
    expect(t.sim.service.ledger.of('dropped-response').length).toBeGreaterThan(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(12);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('FAILED jobs get new attempts with new keys up to --max-retries, then the item fails; the refunds are recorded', async () => {
    const t = await startTestSim(scaled);
    const ws = workspace(
      t.sim,
      imageManifest(2, (i) => (i === 0 ? 'doomed [sim:fail]' : 'fine')),
    );
    const res = await ws.run(['--max-retries', '2']);
    expect(res.code).toBe(1);
    const charges = t.sim.service.ledger.of('charge').filter((c) => c.prompt.includes('doomed'));
    expect(charges).toHaveLength(3);
    expect(new Set(charges.map((c) => c.idempotencyKey)).size).toBe(3);
    expect(t.sim.service.ledger.of('refund')).toHaveLength(3);
    expect(res.stdout).toContain('credits: 8 charged, 6 refunded, 2 net');
    expect(res.stdout).toContain('GENERATION_FAILED 1');
    expect(readState(ws.statePath).items.map((i) => i.state)).toEqual(['failed', 'done']);
  });

  it('EXPIRED is handled like FAILED', async () => {
    const t = await startTestSim(scaled);
    const ws = workspace(
      t.sim,
      imageManifest(1, () => 'late [sim:expire]'),
    );
    const res = await ws.run(['--max-retries', '1']);
    expect(res.code).toBe(1);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(2);
    expect(readState(ws.statePath).items[0]).toMatchObject({ state: 'failed', error_code: 'JOB_EXPIRED' });
  });

  it('a 503 is resent once later with the same key', async () => {
    const t = await startTestSim(scaled);
    const ws = workspace(
      t.sim,
      imageManifest(1, () => 'busy [sim:unavailable]'),
    );
    const res = await ws.run();
    expect(res.code).toBe(0);
    const posts = t.sim.service.ledger.of('request').filter((r) => r.path === '/images');
    expect(posts.map((p) => p.status)).toEqual([503, 202]);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(1);
  });

  it('400 marks the item rejected with the field named; others go on', async () => {
    const t = await startTestSim(scaled);
    // A prompt past the service's length limit (not shown by the spec): only the service can say no.
    const ws = workspace(
      t.sim,
      `version: 1\ndefaults: { model: studio-lite }\nitems:\n  - { id: bad, prompt: "${'x'.repeat(4100)}" }\n  - { id: good, prompt: q }\n`,
    );
    const res = await ws.run();
    expect(res.code).toBe(1);
    const items = readState(ws.statePath).items;
    expect(items).toMatchObject([
      { id: 'bad', state: 'rejected', error_code: 'VALIDATION_ERROR' },
      { id: 'good', state: 'done' },
    ]);
    const status = await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir);
    expect(JSON.parse(status.stdout)).toMatchObject({
      items: { total: 2, done: 1, rejected: 1 },
      failures: { VALIDATION_ERROR: 1 },
    });
  });

  it('422 blocks the item, never resent; the breaker stops the run before the threshold (exit 3)', async () => {
    const t = await startTestSim(scaled);
    const ws = workspace(
      t.sim,
      imageManifest(8, (i) => (i < 4 ? `bad ${i} [sim:block]` : `good ${i}`)),
    );
    const res = await ws.run(['--max-blocked', '2', '--max-images-in-flight', '1']);
    expect(res.code).toBe(3);
    expect(res.stdout).toMatch(/stopped: 2 submissions were blocked by moderation/);
    const blockedPosts = t.sim.service.ledger.of('request').filter((r) => r.code === 'CONTENT_VIOLATION');
    expect(blockedPosts).toHaveLength(2);
    const again = await ws.run(['--max-blocked', '2']);
    expect(again.code).toBe(3);
    expect(t.sim.service.ledger.of('request').filter((r) => r.code === 'CONTENT_VIOLATION')).toHaveLength(2);
  });

  it('402 stops the run with exit 3 and what to do', async () => {
    const t = await startTestSim({ ...scaled, credits: 4 });
    const ws = workspace(t.sim, imageManifest(3));
    const res = await ws.run();
    expect(res.code).toBe(3);
    expect(res.stdout).toMatch(/CREDITS_EXHAUSTED[\s\S]*Top up/);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(2);
  });

  it('a rejected key stops the run before anything is sent (exit 3), and never shows the key', async () => {
    const t = await startTestSim(scaled);
    const ws = workspace(t.sim, imageManifest(2));
    const env = { ...ws.env, GENBATCH_API_KEY: 'gbk_ThisKeyIsWrongButSecret000' };
    const res = await runCli(ws.args(), env, ws.dir);
    expect(res.code).toBe(3);
    expect(res.stderr).toContain('UNAUTHENTICATED');
    expect(res.stdout + res.stderr).not.toContain('gbk_ThisKeyIsWrongButSecret000');
  });

  it('an invalid manifest is exit 2 with its own problems, whatever the service says of the key meanwhile; nothing is submitted', async () => {
    // Each key's /me leaves while the manifest is read: its answer must neither win over the manifest's problems nor go unhandled.
    const t = await startTestSim(scaled);
    const ws = workspace(t.sim, `${imageManifest(2)}  - { id: item-0, prompt: "again" }\n`);
    const refused = await runCliInProcess(
      ws.args(),
      { ...ws.env, GENBATCH_API_KEY: 'gbk_ThisKeyIsWrongButSecret000' },
      ws.dir,
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('duplicate id "item-0"');
    expect(refused.stderr).not.toContain('UNAUTHENTICATED');
    // Nothing listening, then a service that swallows every request: the manifest's problem is said at once, not
    // after the start's wait for a first answer (9 s), nor a swallowed request's own timeout (5 s).
    const startedAt = Date.now();
    const unreachable = await runCliInProcess(
      ws.args(),
      { ...ws.env, GENBATCH_BASE_URL: 'http://127.0.0.1:9/v1' },
      ws.dir,
    );
    expect(unreachable.code).toBe(2);
    expect(unreachable.stderr).toContain('duplicate id "item-0"');
    expect(Date.now() - startedAt).toBeLessThan(4_000);
    await t.sim.outage('blackhole');
    const swallowedAt = Date.now();
    const silent = await runCliInProcess(ws.args(), ws.env, ws.dir);
    expect(silent.code).toBe(2);
    expect(silent.stderr).toContain('duplicate id "item-0"');
    expect(Date.now() - swallowedAt).toBeLessThan(4_000);
    await t.sim.restore();
    expect(t.sim.service.ledger.of('request').filter((r) => r.method === 'POST')).toEqual([]);
  });
  it('a key revoked mid-run (401) stops the run with exit 3 and what to do; state is kept', async () => {
    const t = await startTestSim({ timeScale: 60 });
    const ws = workspace(t.sim, imageManifest(20), {}, 60);
    // Revoked the instant the service charges the 3rd job: mid-run, whatever the machine's speed.
    const unwatch = t.sim.service.ledger.watch((event) => {
      if (event.kind === 'charge' && t.sim.service.ledger.of('charge').length === 3)
        t.sim.service.accounts.byLabel('main').revoked = true;
    });
    const res = await runCliInProcess(ws.args(['--submit-rate', '4/1s']), ws.env, ws.dir);
    unwatch();
    expect(res.code).toBe(3);
    expect(res.stdout).toMatch(/UNAUTHENTICATED[\s\S]*GENBATCH_API_KEY/);
    expect(res.stdout + res.stderr).not.toContain(t.sim.apiKey);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
    t.sim.service.accounts.byLabel('main').revoked = false;
    const rest = await ws.run();
    expect(rest.code, rest.stdout).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(20);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('an expired output link is refreshed by a new GET of the job', async () => {
    const t = await startTestSim(scaled);
    const ws = workspace(
      t.sim,
      imageManifest(1, () => 'mug [sim:expired-link]'),
    );
    const res = await ws.run();
    expect(res.code, res.stdout).toBe(0);
    const downloads = t.sim.service.ledger.of('download');
    expect(downloads.map((d) => d.status)).toEqual([403, 200]);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('waits for the next key day at the daily cap, with no 429, and goes on', async () => {
    // A key day lasts 2 s here.
    const t = await startTestSim({
      timeScale: 43_200,
      keys: [{ label: 'main', dailyCap: 6 }],
      linkTtlSeconds: 7 * 86_400,
    });
    // Links live a week of service time (14 s here): at this scale the usual 15 minutes are 21 ms, which a busy machine misses.
    const ws = workspace(t.sim, imageManifest(5), {}, 43_200);
    const res = await ws.run(['--daily-cap', '6']);
    expect(res.code, res.stdout).toBe(0);
    expect(t.sim.service.ledger.countStatus(429)).toBe(0);
    const days = new Map<number, number>();
    for (const c of t.sim.service.ledger.of('charge'))
      days.set(Math.floor(c.at / 2000), (days.get(Math.floor(c.at / 2000)) ?? 0) + c.credits);
    expect([...days.values()].every((credits) => credits <= 6)).toBe(true);
    expect(days.size).toBeGreaterThanOrEqual(2);
  });

  it('--max-credits stops submissions at the budget (exit 3); a higher budget goes on', async () => {
    const t = await startTestSim(scaled);
    const ws = workspace(t.sim, imageManifest(5));
    const res = await ws.run(['--max-credits', '5']);
    expect(res.code).toBe(3);
    expect(res.stdout).toMatch(/budget of 5 credits is reached/);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(2);
    const more = await ws.run();
    expect(more.code).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(5);
  });

  it('a second run on the same state file is refused while the first holds it', async () => {
    // Jobs of an hour of service time (a minute here): the first run holds the state file throughout.
    const t = await startTestSim({ timeScale: 60, imageSeconds: [3600, 3600] });
    const ws = workspace(t.sim, imageManifest(3), {}, 60);
    const first = ws.start();
    // It holds the lock before it submits: wait for its first submission.
    await new Promise<void>((resolve) => {
      const unwatch = t.sim.service.ledger.watch((event) => {
        if (event.kind !== 'charge') return;
        unwatch();
        resolve();
      });
    });
    const second = await ws.run();
    expect(second.code).toBe(4);
    expect(second.stderr).toMatch(/another genbatch process .* is running on this state file/);
    expect(first.child.exitCode).toBeNull();
    first.child.kill('SIGINT');
    const [code] = await once(first.child, 'exit');
    expect(code).toBe(130);
  });
});

describe('genbatch retry and status', () => {
  it('retry puts failed items back; the next run makes a new attempt with a new key', async () => {
    const t = await startTestSim(scaled);
    const ws = workspace(
      t.sim,
      imageManifest(2, (i) => (i === 0 ? 'doomed [sim:fail]' : 'fine')),
    );
    // A run where nothing failed has nothing to put back: said, and no error (a script's retry && run goes on).
    const fine = workspace((await startTestSim(scaled)).sim, imageManifest(1));
    expect((await fine.run()).code).toBe(0);
    const none = await runCliInProcess(['retry', 'm.yaml', '--code', 'GENERATION_FAILED'], fine.env, fine.dir);
    expect([none.code, none.stdout.trim()]).toEqual([0, 'no item failed: nothing to put back.']);
    expect((await ws.run(['--max-retries', '0'])).code).toBe(1);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(2);
    // A code no item stopped with is a usage error that names the codes there are.
    const nothing = await runCliInProcess(['retry', 'm.yaml', '--code', 'SOMETHING_ELSE'], ws.env, ws.dir);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toMatch(/no item stopped with SOMETHING_ELSE; the codes there are: GENERATION_FAILED/);
    // The flag before the manifest, as the help's example has it: the manifest is never taken for a code.
    const retried = await runCliInProcess(['retry', '--code', 'GENERATION_FAILED', 'm.yaml'], ws.env, ws.dir);
    expect(retried.code).toBe(0);
    expect(retried.stdout).toMatch(/^1 item put back/);
    expect(readState(ws.statePath).items[0]!.state).toBe('pending');
    expect((await ws.run(['--max-retries', '1'])).code).toBe(1);
    const doomed = t.sim.service.ledger.of('charge').filter((c) => c.prompt.includes('doomed'));
    expect(doomed).toHaveLength(2);
    expect(new Set(doomed.map((c) => c.idempotencyKey)).size).toBe(2);
  });

  it('status reads the state file alone, and says nothing has run when there is none (exit 0)', async () => {
    const t = await startTestSim(scaled);
    const ws = workspace(t.sim, imageManifest(3));
    const before = await runCliInProcess(['status', 'm.yaml'], ws.env, ws.dir);
    expect(before.code).toBe(0);
    expect(before.stdout).toContain(`m.yaml: nothing has run yet (its state will be ${ws.statePath})`);
    const json = await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir);
    expect(json.code).toBe(0);
    const nothing = JSON.parse(json.stdout) as { state: string; items: { total: number }; run: { sessions: number } };
    expect(nothing).toMatchObject({ state: ws.statePath, items: { total: 0 }, run: { sessions: 0 } });
    // Asking made no state: the run that follows is the first.
    expect(existsSync(ws.statePath)).toBe(false);
    await ws.run();
    const requests = t.sim.service.ledger.of('request').length;
    const table = await runCliInProcess(['status', 'm.yaml'], ws.env, ws.dir);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/done\s+3/);
    expect(table.stdout).toMatch(/credits: 6 charged, 0 refunded, 6 net/);
    expect(t.sim.service.ledger.of('request').length).toBe(requests);
  });

  it('failures you can act on: the run ends with the retry command, status lists each item with one message, blocked ones say how to resubmit', async () => {
    const t = await startTestSim(scaled);
    const prompts = ['doomed [sim:fail]', 'fine', 'naughty [sim:block]'];
    const ws = workspace(
      t.sim,
      imageManifest(3, (i) => prompts[i]!),
    );
    const res = await ws.run(['--max-retries', '0']);
    expect(res.code).toBe(1);
    expect(res.stdout).toContain(
      'to submit the 1 failed or skipped item again (new attempts, paid again): genbatch retry m.yaml',
    );
    expect(res.stdout).toContain('1 blocked item (moderation) is never resent unchanged');
    const status = await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir);
    const problems = (
      JSON.parse(status.stdout) as { problems: { id: string; state: string; code: string; message: string }[] }
    ).problems;
    expect(problems.map((p) => [p.id, p.state, p.code])).toEqual([
      ['item-0', 'failed', 'GENERATION_FAILED'],
      ['item-2', 'blocked', 'CONTENT_VIOLATION'],
    ]);
    // One message per error: the code is said once, beside it, not again inside it.
    for (const p of problems) expect(p.message).not.toContain(p.code);
    expect(problems[1]!.message).not.toMatch(/POST \/v1/);
    const table = await runCliInProcess(['status', 'm.yaml'], ws.env, ws.dir);
    expect(table.stdout).toMatch(/item-0\s+failed\s+GENERATION_FAILED/);
    expect(table.stdout).toMatch(/item-2\s+blocked\s+CONTENT_VIOLATION/);
    // retry says what it leaves, its verb agreeing with its count.
    const retried = await runCliInProcess(['retry', 'm.yaml'], ws.env, ws.dir);
    expect(retried.stdout).toContain('1 blocked item stays blocked: change its prompt to resubmit it.');
  });
});
