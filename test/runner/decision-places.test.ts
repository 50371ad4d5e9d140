import { copyFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readState, workspace, type RunWorkspace } from '../helpers/run.js';
import { cleanEnv, runCliInProcess } from '../helpers/cli.js';
import { startTestSim, type TestSim } from '../helpers/sim.js';
import { DRAFT_FINAL } from '../helpers/manifests.js';

const PRODUCTS = 'sku,title\nA,Red mug\nB,Blue mug\n';

const statesIn = (path: string) => new Map(readState(path).items.map((i) => [i.id, i.state]));

/** The items charged by the simulator, by the state that knows their jobs. */
function chargedItems(t: TestSim, statePath: string): string[] {
  const itemOf = new Map(readState(statePath).attempts.map((a) => [a.job_id, a.item_id]));
  return t.sim.service.ledger
    .of('charge')
    .map((c) => itemOf.get(c.jobId) ?? 'unknown')
    .sort();
}

/** The last line a command printed that starts with `genbatch `, as a user would type it: its words. */
function printedStep(stdout: string): string[] {
  const step = stdout.match(/else: (genbatch [^\n]+)/)?.[1];
  expect(step, stdout).toBeDefined();
  return step!.split(' ').slice(1);
}

describe('a decision lands only where it belongs', () => {
  it("a trial (against genbatch simulate): approve finds its state with no flag, says so, and its printed next step makes the final; --simulate is the rehearsal's, and leaves the trial alone", async () => {
    const t = await startTestSim({ timeScale: 600, announce: true });
    const ws = workspace(t.sim, DRAFT_FINAL, { 'products.csv': PRODUCTS });
    const trialState = join(ws.dir, '.genbatch', 'm.simulated.sqlite');
    const cli = (...args: string[]) => runCliInProcess(args, ws.env, ws.dir);
    expect((await cli('run', 'm.yaml')).code).toBe(1);
    expect(statesIn(trialState).get('final-A')).toBe('waiting');

    // --simulate names the rehearsal: nothing is recorded, and it says where the trial's state is.
    const wrong = await cli('approve', 'm.yaml', 'draft-A', '--simulate');
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/m\.rehearsal\.sqlite.*a trial's state .*m\.simulated\.sqlite: leave out --simulate/);
    expect(statesIn(trialState).get('final-A')).toBe('waiting');

    const approved = await cli('approve', 'm.yaml', 'draft-A');
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain(`state: ${trialState}`);
    const step = printedStep(approved.stdout);
    expect(step).toEqual(['run', 'm.yaml']);
    // Typed as printed: the same trial goes on, its drafts and the decision intact, and the final is made.
    const next = await cli(...step);
    expect(next.code, next.stdout + next.stderr).toBe(1);
    const states = statesIn(trialState);
    expect([states.get('draft-A'), states.get('draft-B'), states.get('final-A'), states.get('final-B')]).toEqual([
      'done',
      'done',
      'done',
      'waiting',
    ]);
    expect(chargedItems(t, trialState)).toEqual(['draft-A', 'draft-B', 'final-A']);
    const record = JSON.parse((await cli('decisions', 'm.yaml', '--json')).stdout);
    expect(record).toMatchObject([{ itemId: 'draft-A', decision: 'approved' }]);

    // A rehearsal beside it has its own places, and leaves the trial's as they were.
    const rehearsal = await cli('run', 'm.yaml', '--simulate');
    expect(rehearsal.code, rehearsal.stderr).toBe(1);
    expect(existsSync(join(ws.dir, '.genbatch', 'm.rehearsal.sqlite'))).toBe(true);
    expect(existsSync(join(ws.dir, 'out', 'm.rehearsal', 'draft-A-1.png'))).toBe(true);
    expect(statesIn(trialState)).toEqual(states);
  }, 90_000);

  it("a rehearsal's decision, then its printed next step: the rehearsal goes on with its state and makes the finals", async () => {
    const dir = workspace((await startTestSim()).sim, DRAFT_FINAL, { 'products.csv': PRODUCTS }).dir;
    const env = cleanEnv();
    const cli = (...args: string[]) => runCliInProcess(args, env, dir);
    const state = join(dir, '.genbatch', 'm.rehearsal.sqlite');
    expect((await cli('run', 'm.yaml', '--simulate', '--time-scale', '600')).code).toBe(1);
    // Without --simulate there is no state here to decide on; the rehearsal's is named.
    const wrong = await cli('approve', 'm.yaml', '--waiting');
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/a rehearsal's state is at .*m\.rehearsal\.sqlite: add --simulate/);
    const approved = await cli('approve', 'm.yaml', '--waiting', '--simulate');
    expect(approved.code, approved.stderr).toBe(0);
    const step = printedStep(approved.stdout);
    expect(step).toEqual(['run', 'm.yaml', '--simulate']);
    const next = await cli(...step, '--time-scale', '600');
    expect(next.code, next.stdout + next.stderr).toBe(0);
    expect(next.stderr).toMatch(/goes on with its own state to carry out the decisions made on it/);
    expect([...statesIn(state).values()]).toEqual(['done', 'done', 'done', 'done']);
    // Run again, with nothing decided to carry out: it starts over.
    const again = await cli('run', 'm.yaml', '--simulate', '--time-scale', '600');
    expect(again.stderr).toMatch(/it starts over each time/);
  }, 90_000);

  it("a real run's state named with --simulate, or another manifest's state: exit 2, nothing recorded, nothing charged later", async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws: RunWorkspace = workspace(t.sim, DRAFT_FINAL, { 'products.csv': PRODUCTS });
    const cli = (...args: string[]) => runCliInProcess(args, ws.env, ws.dir);
    expect((await runCliInProcess(ws.args(), ws.env, ws.dir)).code).toBe(1);

    const rehearsalFlag = await cli('approve', 'm.yaml', 'draft-A', '--simulate', '--state', ws.statePath);
    expect(rehearsalFlag.code).toBe(2);
    expect(rehearsalFlag.stderr).toMatch(
      /is a real run's state, and --simulate names a rehearsal's.*Nothing was recorded/,
    );

    writeFileSync(join(ws.dir, 'other.yaml'), DRAFT_FINAL.replace('version: 1', 'version: 1\nname: other'));
    const otherManifest = await cli('approve', 'other.yaml', 'draft-A', '--state', ws.statePath);
    expect(otherManifest.code).toBe(2);
    expect(otherManifest.stderr).toMatch(
      /is the state of the manifest named "m", not of "other".*Nothing was recorded/,
    );

    // A rehearsal's state given without --simulate is refused too.
    const copy = join(ws.dir, 'copy.sqlite');
    expect(
      (await runCliInProcess(['run', 'm.yaml', '--simulate', '--time-scale', '600'], cleanEnv(), ws.dir)).code,
    ).toBe(1);
    copyFileSync(join(ws.dir, '.genbatch', 'm.rehearsal.sqlite'), copy);
    const rehearsalState = await cli('approve', 'm.yaml', 'draft-A', '--state', copy);
    expect(rehearsalState.code).toBe(2);
    expect(rehearsalState.stderr).toMatch(/is a rehearsal's state: add --simulate/);

    // Thousands of unknown ids: the first 20 and a count, in one short line.
    const many = await cli('approve', 'm.yaml', ...Array.from({ length: 5_000 }, (_, i) => `nope-${i}`));
    expect(many.code).toBe(2);
    expect(many.stderr).toMatch(/no item has the id "nope-0", .*"nope-19" and 4,980 more in .*Nothing was recorded/);
    expect(many.stderr.length).toBeLessThan(1_000);

    expect(JSON.parse((await cli('decisions', 'm.yaml', '--json')).stdout)).toEqual([]);
    expect((await runCliInProcess(ws.args(), ws.env, ws.dir)).code).toBe(1);
    expect(chargedItems(t, ws.statePath)).toEqual(['draft-A', 'draft-B']);
  }, 90_000);
});
