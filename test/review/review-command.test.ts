import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { cleanEnv, runCliInProcess, startCli } from '../helpers/cli.js';
import { raw, startTestReview } from '../helpers/review.js';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';
import { FolderSink } from '../../src/sink/index.js';

describe('genbatch review, the command', () => {
  it('works beside a run that holds the state, neither blocking the other, and stops at once on Ctrl-C', {
    timeout: 60_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(4));
    expect((await ws.run(['--only', 'item-0'])).code).toBe(0);
    // A run that holds the state's lock and waits: started paused.
    expect((await runCliInProcess(['pause', 'm.yaml'], ws.env, ws.dir)).code).toBe(0);
    const run = ws.start();
    await run.waitFor(/paused since/);

    const review = startCli(['review', 'm.yaml', '--json'], ws.env, ws.dir);
    const [printed] = await review.waitFor(/\{[^}]*"outDir"[^}]*\}/);
    const { url, state } = JSON.parse(printed) as { url: string; state: string };
    expect(state).toBe(ws.statePath);
    const { origin, searchParams } = new URL(url);
    const token = searchParams.get('token')!;
    const summary = JSON.parse((await raw(origin, 'GET', `/api/summary?token=${token}`)).body);
    expect(summary.run.running).toBe(true);
    expect(summary.run.pausedSince).not.toBeNull();
    const decided = await raw(
      origin,
      'POST',
      '/api/review',
      { 'content-type': 'application/json', 'x-genbatch-token': token },
      JSON.stringify({ itemId: 'item-0', version: 1, decision: 'approved' }),
    );
    expect(decided.status, decided.body).toBe(200);

    review.child.kill('SIGINT');
    const [code] = (await once(review.child, 'exit')) as [number];
    expect(code).toBe(0);
    // The run goes on and ends as if the review had never been there.
    expect((await runCliInProcess(['resume', 'm.yaml'], ws.env, ws.dir)).code).toBe(0);
    const [runCode] = (await once(run.child, 'exit')) as [number];
    expect(runCode, run.output()).toBe(0);
    const status = JSON.parse((await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir)).stdout);
    expect(status.review).toEqual({ approved: 1, rejected: 0, unreviewed: 3, rejectedByChecks: 0 });
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('refuses a wildcard address, which no Host header can name', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(1));
    const result = await runCliInProcess(['review', 'm.yaml', '--host', '0.0.0.0'], ws.env, ws.dir);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--host 0\.0\.0\.0 listens on every address/);
  });

  it('says what to do when nothing has run yet', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(1));
    const result = await runCliInProcess(['review', 'm.yaml'], ws.env, ws.dir);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no state file at \S+m\.sqlite: nothing has run yet/);
  });
});

describe('genbatch review on a rehearsal', () => {
  it('follows a rehearsal that starts over: the replaced state file is read afresh', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-review-sim-'));
    writeFileSync(join(dir, 'm.yaml'), imageManifest(2));
    const env = cleanEnv();
    const rehearse = () => runCliInProcess(['run', 'm.yaml', '--simulate', '--time-scale', '600'], env, dir);
    expect((await rehearse()).code).toBe(0);
    const statePath = join(dir, '.genbatch', 'm.rehearsal.sqlite');
    const server = await startTestReview({
      statePath,
      outputs: new FolderSink(join(dir, 'out', 'm.rehearsal')),
      title: 'm',
      budget: null,
    });
    const summary = async () =>
      JSON.parse((await raw(server.base, 'GET', `/api/summary?token=${server.token}`)).body) as {
        review: { approved: number };
      };
    const approved = await raw(
      server.base,
      'POST',
      '/api/review',
      { 'content-type': 'application/json', 'x-genbatch-token': server.token },
      JSON.stringify({ itemId: 'item-0', version: 1, decision: 'approved' }),
    );
    expect(approved.status).toBe(200);
    expect((await summary()).review.approved).toBe(1);
    // A new rehearsal starts over: its state has no decision.
    expect((await rehearse()).code).toBe(0);
    await vi.waitFor(async () => expect((await summary()).review.approved).toBe(0), { timeout: 10_000, interval: 100 });
  });
});
