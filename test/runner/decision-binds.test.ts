import { describe, expect, it } from 'vitest';
import { readState, workspace, type RunWorkspace } from '../helpers/run.js';
import { exitCodeWithin, runCli, startCli } from '../helpers/cli.js';
import { startTestSim, type TestSim } from '../helpers/sim.js';
import { DRAFT_FINAL } from '../helpers/manifests.js';

const SKUS = Array.from({ length: 10 }, (_, i) => `S${i}`);
const PRODUCTS = `sku,title\n${SKUS.map((s) => `${s},Mug ${s}`).join('\n')}\n`;

const stateOf = (ws: RunWorkspace) => new Map(readState(ws.statePath).items.map((i) => [i.id, i]));

/** Each charge the service made, with the item it was for and when it was made (the ledger's own clock, real time). */
function charges(t: TestSim, ws: RunWorkspace): { item: string; at: number }[] {
  const itemOf = new Map(readState(ws.statePath).attempts.map((a) => [a.job_id, a.item_id]));
  return t.sim.service.ledger.of('charge').map((c) => ({ item: itemOf.get(c.jobId) ?? `job ${c.jobId}`, at: c.at }));
}

async function until(what: () => boolean, ms = 20_000): Promise<void> {
  for (const end = Date.now() + ms; !what(); ) {
    if (Date.now() > end) throw new Error('the state did not come');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const queuedFinals = (ws: RunWorkspace) =>
  [...stateOf(ws).values()].filter((i) => i.id.startsWith('final-') && i.state === 'queued').map((i) => i.id);

/** Ten drafts made and approved, their finals handed to a run sending one a second: most sit queued, unsent. */
async function finalsQueued(t: TestSim) {
  const ws = workspace(t.sim, DRAFT_FINAL, { 'products.csv': PRODUCTS });
  const cli = (...args: string[]) => runCli(args, ws.env, ws.dir);
  const drafts = await runCli(ws.args(), ws.env, ws.dir);
  expect(drafts.code, drafts.stdout + drafts.stderr).toBe(1);
  const run = startCli(ws.args(['--wait-for-decisions', '--submit-rate', '1/1s']), ws.env, ws.dir);
  await run.waitFor(/10 items wait for a decision/);
  expect((await cli('approve', 'm.yaml', '--waiting')).code).toBe(0);
  await until(() => queuedFinals(ws).length >= 6);
  return { ws, cli, run };
}

describe('a decision binds until the moment of sending', () => {
  it('finals queued for a slot, their drafts rejected: none is charged after the rejection returns', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const { ws, cli, run } = await finalsQueued(t);
    const takenBack = queuedFinals(ws).slice(0, 5);
    const drafts = takenBack.map((id) => id.replace('final-', 'draft-'));
    const rejected = await cli('reject', 'm.yaml', ...drafts, '--json');
    const returnedAt = Date.now();
    expect(rejected.code, rejected.stderr).toBe(0);
    // The decision says what it took back.
    const said = JSON.parse(rejected.stdout).decisions as { id: string; takenBack: string[] }[];
    expect(said.flatMap((d) => d.takenBack).sort()).toEqual([...takenBack].sort());
    for (const id of takenBack)
      expect(stateOf(ws).get(id)).toMatchObject({ state: 'skipped', error_code: 'GATE_REJECTED' });
    // The others are made, one a second; the run ends with the taken-back ones skipped.
    expect(await exitCodeWithin(run, 30_000)).toBe(1);
    const late = charges(t, ws).filter((c) => takenBack.includes(c.item));
    expect(late, `charged after the rejection returned at ${returnedAt}`).toEqual([]);
    expect(charges(t, ws).filter((c) => c.item.startsWith('final-'))).toHaveLength(5);
  }, 90_000);

  it('killed (SIGKILL) while finals sit queued, rejected, run again: the resume pays for none of them', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const { ws, cli, run } = await finalsQueued(t);
    run.child.kill('SIGKILL');
    await exitCodeWithin(run, 10_000);
    const takenBack = queuedFinals(ws).slice(0, 5);
    expect(takenBack.length).toBe(5);
    const drafts = takenBack.map((id) => id.replace('final-', 'draft-'));
    const rejected = await cli('reject', 'm.yaml', ...drafts);
    expect(rejected.code, rejected.stderr).toBe(0);
    expect(rejected.stdout).toMatch(/taken back, unpaid/);
    const again = await runCli(ws.args(), ws.env, ws.dir);
    expect(again.code, again.stdout + again.stderr).toBe(1);
    expect(charges(t, ws).filter((c) => takenBack.includes(c.item))).toEqual([]);
    for (const id of takenBack) expect(stateOf(ws).get(id)!.state).toBe('skipped');
    // The finals not taken back were all made, each charged once.
    expect(charges(t, ws).filter((c) => c.item.startsWith('final-'))).toHaveLength(5);
  }, 90_000);
});
