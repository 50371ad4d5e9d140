import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readState, workspace, type RunWorkspace } from '../helpers/run.js';
import { cleanEnv, exitCodeWithin, runCli, startCli } from '../helpers/cli.js';
import { startTestSim, type TestSim } from '../helpers/sim.js';
import { DRAFT_FINAL, DRAFT_FINAL_VIDEO, STILL_AND_SPIN } from '../helpers/manifests.js';

const PRODUCTS = 'sku,title\nA,Red mug\nB,Blue mug\nC,Green mug\n';

/**
 * The items the simulator charged, each as often as it was charged. The service charges before a running run
 * records the job it answered with: the state is waited for (a few seconds at most), not a clock.
 */
async function chargedItems(t: TestSim, ws: RunWorkspace): Promise<string[]> {
  const items = () => {
    const itemOf = new Map(readState(ws.statePath).attempts.map((a) => [a.job_id, a.item_id]));
    return t.sim.service.ledger.of('charge').map((c) => itemOf.get(c.jobId) ?? `unknown job ${c.jobId}`);
  };
  for (const until = Date.now() + 5_000; items().some((i) => i.startsWith('unknown')) && Date.now() < until; )
    await new Promise((r) => setTimeout(r, 20));
  return items().sort();
}

const stateOf = (ws: RunWorkspace) => new Map(readState(ws.statePath).items.map((i) => [i.id, i]));

describe('gates: the costly step is paid for only once a person approved the cheap one', () => {
  it('run, approve and reject, run, redo, approve, run: nothing unapproved is charged, each attempt once', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, DRAFT_FINAL_VIDEO, { 'products.csv': PRODUCTS });
    const cli = (...args: string[]) => runCli(args, ws.env, ws.dir);
    const run = (...extra: string[]) => runCli(ws.args(extra), ws.env, ws.dir);

    // The drafts are made; the finals wait, and the run says what they would cost and who decides.
    const first = await run();
    expect(first.code, first.stdout + first.stderr).toBe(1);
    // The finals wait on the drafts, the videos on the finals (not made yet): six items, priced, none paid.
    expect(first.stdout).toMatch(
      /6 items wait for a decision \(\d+ credits if approved; nothing paid for them yet\), on the gates draft-A, draft-B, draft-C, … \(6 in all\)/,
    );
    expect(first.stdout).toContain('genbatch approve m.yaml');
    expect(await chargedItems(t, ws)).toEqual(['draft-A', 'draft-B', 'draft-C']);
    expect(stateOf(ws).get('final-A')!.state).toBe('waiting');
    expect(stateOf(ws).get('spin-A')!.state).toBe('waiting');

    // A gate not made yet, or an unknown id, is refused whole: nothing is recorded.
    const refused = await cli('approve', 'm.yaml', 'draft-A', 'final-A', 'nope');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/no item has the id "nope"/);
    expect(refused.stderr).toMatch(/final-A \(waiting\)/);
    expect(stateOf(ws).get('final-A')!.state).toBe('waiting');

    const approved = await cli('approve', 'm.yaml', 'draft-A', '--json');
    expect(approved.code, approved.stderr).toBe(0);
    expect(JSON.parse(approved.stdout).decisions).toEqual([
      {
        id: 'draft-A',
        version: 1,
        decision: 'approved',
        by: expect.any(String),
        unlocked: ['final-A'],
        skipped: [],
        takenBack: [],
        sentBefore: [],
        credits: { unlocked: 8, skipped: 0, takenBack: 0, sentBefore: 0 },
        upTo: { items: 2, credits: expect.any(Number) },
      },
    ]);
    const rejected = await cli('reject', 'm.yaml', 'draft-B', '--note', 'off-model');
    expect(rejected.code, rejected.stderr).toBe(0);
    expect(rejected.stdout).toMatch(/draft-B \(version 1\) rejected; 1 item skipped, unpaid: final-B/);
    expect(stateOf(ws).get('final-B')).toMatchObject({ state: 'skipped', error_code: 'GATE_REJECTED' });
    expect(stateOf(ws).get('final-B')!.error_message).toContain('draft-B');
    // The results files say it at once, with no report run.
    const results = new Map(
      readFileSync(join(ws.outDir, 'results.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
        .map((row) => [row.id, row]),
    );
    expect(results.get('draft-B').review).toMatchObject({ decision: 'rejected', note: 'off-model' });
    expect(results.get('final-B')).toMatchObject({ state: 'skipped', reason: expect.stringContaining('draft-B') });
    expect(results.get('final-C')).toMatchObject({
      state: 'waiting',
      reason: 'waits for a decision on its gate draft-C',
    });

    // Only the approved draft's final is made; its video waits for the final's own approval.
    const second = await run();
    expect(second.code, second.stdout + second.stderr).toBe(1);
    expect(await chargedItems(t, ws)).toEqual(['draft-A', 'draft-B', 'draft-C', 'final-A']);
    expect(stateOf(ws).get('spin-A')!.state).toBe('waiting');

    // The rejected draft made again: its final waits for the new version's decision, not skipped.
    const redo = await run('--redo-rejected');
    expect(redo.code, redo.stdout + redo.stderr).toBe(1);
    expect(await chargedItems(t, ws)).toEqual(['draft-A', 'draft-B', 'draft-B', 'draft-C', 'final-A']);
    expect(stateOf(ws).get('final-B')!.state).toBe('waiting');

    // Version 1, the one rejected, is no longer the current one: a decision on it is refused, naming version 2.
    const stale = await cli('approve', 'm.yaml', 'draft-B@1', 'final-A');
    expect(stale.code).toBe(2);
    expect(stale.stderr).toMatch(
      /made again since: draft-B@1 \(the current version is draft-B@2\)\. Nothing was recorded/,
    );
    expect(stateOf(ws).get('final-B')!.state).toBe('waiting');
    expect(stateOf(ws).get('spin-A')!.state).toBe('waiting');
    expect((await cli('approve', 'm.yaml', 'draft-B@2', 'final-A')).code).toBe(0);
    const third = await run();
    expect(third.code, third.stdout + third.stderr).toBe(1);
    expect(await chargedItems(t, ws)).toEqual([
      'draft-A',
      'draft-B',
      'draft-B',
      'draft-C',
      'final-A',
      'final-B',
      'spin-A',
    ]);
    // Still undecided: draft-C's final, and final-B's video. Never charged.
    expect(stateOf(ws).get('final-C')!.state).toBe('waiting');
    expect(stateOf(ws).get('spin-B')!.state).toBe('waiting');
    const idempotencyKeys = t.sim.service.ledger.of('charge').map((c) => c.idempotencyKey);
    expect(new Set(idempotencyKeys).size).toBe(idempotencyKeys.length);
  }, 120_000);

  it('run --wait-for-decisions stays while items wait, sends each within 2 s of its approval, and ends by itself', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, DRAFT_FINAL_VIDEO, { 'products.csv': 'sku,title\nA,Red mug\n' });
    const cli = (...args: string[]) => runCli(args, ws.env, ws.dir);
    const charges = () => t.sim.service.ledger.of('charge').length;
    const run = startCli(ws.args(['--wait-for-decisions']), ws.env, ws.dir);
    // How many wait, and what they would cost: the final (8) and the video (a 5 s clip at 720p).
    await run.waitFor(/2 items wait for a decision on 2 gates, \d+ credits if approved/);
    expect(await chargedItems(t, ws)).toEqual(['draft-A']);
    // Approved from another process: the run sends the final at once.
    expect((await cli('approve', 'm.yaml', 'draft-A')).code).toBe(0);
    const approvedAt = Date.now();
    while (charges() < 2 && Date.now() - approvedAt < 10_000) await new Promise((r) => setTimeout(r, 20));
    expect(Date.now() - approvedAt).toBeLessThan(2_000);
    await run.waitFor(/1 item waits for a decision/);
    expect((await cli('approve', 'm.yaml', 'final-A')).code).toBe(0);
    // The video made, none waits: the run ends by itself, every item done.
    expect(await exitCodeWithin(run, 30_000)).toBe(0);
    expect(await chargedItems(t, ws)).toEqual(['draft-A', 'final-A', 'spin-A']);
  }, 60_000);

  it('a waiting run killed (SIGKILL), a decision made, the run started again: the item is sent once', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, DRAFT_FINAL_VIDEO, { 'products.csv': 'sku,title\nA,Red mug\n' });
    const waiting = startCli(ws.args(['--wait-for-decisions']), ws.env, ws.dir);
    await waiting.waitFor(/2 items wait for a decision/);
    waiting.child.kill('SIGKILL');
    await exitCodeWithin(waiting, 10_000);
    expect((await runCli(['approve', 'm.yaml', 'draft-A'], ws.env, ws.dir)).code).toBe(0);
    const again = await runCli(ws.args(), ws.env, ws.dir);
    expect(again.code, again.stdout + again.stderr).toBe(1);
    expect(await chargedItems(t, ws)).toEqual(['draft-A', 'final-A']);
    expect(stateOf(ws).get('spin-A')!.state).toBe('waiting');
  }, 60_000);

  it('a rejected output is never an input, gated or not: --only its dependent says so and pays nothing; redone, it goes on', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, STILL_AND_SPIN);
    const run = (...extra: string[]) => runCli(ws.args(extra), ws.env, ws.dir);
    expect((await run('--only', 'still')).code).toBe(0);
    expect((await runCli(['reject', 'm.yaml', 'still'], ws.env, ws.dir)).code).toBe(0);
    const spin = await run('--only', 'spin');
    expect(spin.code, spin.stdout + spin.stderr).toBe(1);
    expect(spin.stdout).toMatch(
      /1 item was not sent: an input's current version was rejected in review.*spin \(from still\)/,
    );
    expect(await chargedItems(t, ws)).toEqual(['still']);
    const redone = await run('--redo-rejected');
    expect(redone.code, redone.stdout + redone.stderr).toBe(0);
    expect(await chargedItems(t, ws)).toEqual(['spin', 'still', 'still']);
  }, 60_000);

  it.each([
    ['approve', 0, ['draft-A', 'final-A']],
    ['skip', 1, ['draft-A']],
  ] as const)(
    'a gate no person decided within approval.timeout is decided then (onTimeout: %s), in the service time',
    async (onTimeout, code, charged) => {
      // An hour of the service's time is a second here.
      const t = await startTestSim({ timeScale: 3600 });
      const manifest = DRAFT_FINAL.replace(
        'version: 1\n',
        `version: 1\napproval: { timeout: 1h, onTimeout: ${onTimeout} }\n`,
      );
      const ws = workspace(t.sim, manifest, { 'products.csv': 'sku,title\nA,Red mug\n' }, 3600);
      const run = await runCli(ws.args(['--wait-for-decisions']), ws.env, ws.dir);
      expect(run.code, run.stdout + run.stderr).toBe(code);
      expect(await chargedItems(t, ws)).toEqual(charged);
      const rows = readFileSync(join(ws.outDir, 'results.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      const decided = rows.find((row) => row.id === 'draft-A');
      expect(decided.review).toMatchObject({
        decision: onTimeout === 'approve' ? 'approved' : 'rejected',
        byTimeout: true,
        note: expect.stringMatching(/^no decision within its approval timeout/),
      });
      expect(decided).toMatchObject({ decidedBy: 'timeout' });
      // A timeout's skip says it was the timeout, not a review.
      if (onTimeout === 'skip')
        expect(rows.find((row) => row.id === 'final-A').reason).toMatch(
          /^its gate draft-A was not decided within its approval timeout, which skips what it gates/,
        );
    },
    60_000,
  );

  it('at the real pace too: a 2 s approval timeout approves the draft after 2 s of real time, not before', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const manifest = DRAFT_FINAL.replace('version: 1\n', 'version: 1\napproval: { timeout: 2s, onTimeout: approve }\n');
    const ws = workspace(t.sim, manifest, { 'products.csv': 'sku,title\nA,Red mug\n' }, 1);
    const started = Date.now();
    const run = await runCli(ws.args(['--wait-for-decisions']), ws.env, ws.dir);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
    expect(await chargedItems(t, ws)).toEqual(['draft-A', 'final-A']);
  }, 60_000);

  it('a rehearsal (--simulate) runs the gates too: it waits, approve --simulate decides, the rehearsal goes on', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const manifest = DRAFT_FINAL;
    const ws = workspace(t.sim, manifest, { 'products.csv': 'sku,title\nA,Red mug\n' });
    const env = cleanEnv();
    const rehearsal = startCli(
      ['run', 'm.yaml', '--simulate', '--wait-for-decisions', '--time-scale', '600'],
      env,
      ws.dir,
    );
    await rehearsal.waitFor(/1 item waits for a decision/);
    const approved = await runCli(['approve', 'm.yaml', 'draft-A', '--simulate'], env, ws.dir);
    expect(approved.code, approved.stdout + approved.stderr).toBe(0);
    expect(await exitCodeWithin(rehearsal, 30_000)).toBe(0);
    expect(rehearsal.output()).toMatch(/all 2 ended, 2 done/);
    // Nothing of it reached the service.
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  }, 60_000);

  it('an item made from an earlier version of its input is changed: status counts it, estimate prices it, --redo-changed remakes it', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, STILL_AND_SPIN);
    const cli = (...args: string[]) => runCli(args, ws.env, ws.dir);
    const run = (...extra: string[]) => runCli(ws.args(extra), ws.env, ws.dir);
    expect((await run()).code).toBe(0);
    // The still made again: the video stays as it was, made from the first still.
    expect((await cli('reject', 'm.yaml', 'still')).code).toBe(0);
    expect((await run('--redo-rejected', '--only', 'still')).code).toBe(0);
    expect(await chargedItems(t, ws)).toEqual(['spin', 'still', 'still']);
    const status = JSON.parse((await cli('status', 'm.yaml', '--json')).stdout);
    expect(status.changed).toBe(1);
    const estimate = JSON.parse(
      (await cli('estimate', 'm.yaml', '--redo-changed', '--json', '--time-scale', '600')).stdout,
    );
    expect(estimate.remaining.items.total).toBe(1);
    expect(estimate.remaining.credits.total).toBeGreaterThan(0);
    const redone = await run('--redo-changed');
    expect(redone.code, redone.stdout + redone.stderr).toBe(0);
    expect(await chargedItems(t, ws)).toEqual(['spin', 'spin', 'still', 'still']);
    expect(JSON.parse((await cli('status', 'm.yaml', '--json')).stdout).changed).toBe(0);
  }, 60_000);
});
