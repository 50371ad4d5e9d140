import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readState, workspace, type RunWorkspace } from '../helpers/run.js';
import { exitCodeWithin, runCliInProcess, startCli } from '../helpers/cli.js';
import { startTestSim, type TestSim } from '../helpers/sim.js';
import { DRAFT_FINAL } from '../helpers/manifests.js';

const SKUS = Array.from({ length: 6 }, (_, i) => `S${i}`);
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

/** Six drafts made and approved, their finals handed to a run sending one a second: most sit queued, unsent. */
async function finalsQueued(t: TestSim) {
  const ws = workspace(t.sim, DRAFT_FINAL, { 'products.csv': PRODUCTS });
  const cli = (...args: string[]) => runCliInProcess(args, ws.env, ws.dir);
  const drafts = await runCliInProcess(ws.args(), ws.env, ws.dir);
  expect(drafts.code, drafts.stdout + drafts.stderr).toBe(1);
  const run = startCli(ws.args(['--wait-for-decisions', '--submit-rate', '1/1s']), ws.env, ws.dir);
  await run.waitFor(/6 items wait for a decision/);
  expect((await cli('approve', 'm.yaml', '--waiting')).code).toBe(0);
  await until(() => queuedFinals(ws).length >= 4);
  return { ws, cli, run };
}

describe('a decision binds until the moment of sending', () => {
  it('finals queued for a slot, their drafts rejected: none is charged after the rejection returns', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const { ws, cli, run } = await finalsQueued(t);
    // The last three queued: the first in the window's line may leave as the rejection is made (it is then named).
    const rejectedFinals = queuedFinals(ws).slice(-3);
    const drafts = rejectedFinals.map((id) => id.replace('final-', 'draft-'));
    const rejected = await cli('reject', 'm.yaml', ...drafts, '--json');
    const returnedAt = Date.now();
    expect(rejected.code, rejected.stderr).toBe(0);
    // The decision says what it took back, and names any final sent before it.
    const said = JSON.parse(rejected.stdout).decisions as { takenBack: string[]; sentBefore: { id: string }[] }[];
    const takenBack = said.flatMap((d) => d.takenBack);
    const sentBefore = said.flatMap((d) => d.sentBefore.map((s) => s.id));
    expect([...takenBack, ...sentBefore].sort()).toEqual([...rejectedFinals].sort());
    expect(takenBack.length).toBeGreaterThanOrEqual(2);
    for (const id of takenBack)
      expect(stateOf(ws).get(id)).toMatchObject({ state: 'skipped', error_code: 'GATE_REJECTED' });
    // The others are made, one a second; the run ends with the taken-back ones skipped.
    expect(await exitCodeWithin(run, 30_000)).toBe(1);
    const late = charges(t, ws).filter((c) => takenBack.includes(c.item));
    expect(late, `charged after the rejection returned at ${returnedAt}`).toEqual([]);
    expect(charges(t, ws).filter((c) => c.item.startsWith('final-'))).toHaveLength(3 + sentBefore.length);
  }, 90_000);

  it('killed (SIGKILL) while finals sit queued, rejected, run again: the resume pays for none of them', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const { ws, cli, run } = await finalsQueued(t);
    run.child.kill('SIGKILL');
    await exitCodeWithin(run, 10_000);
    const takenBack = queuedFinals(ws).slice(0, 3);
    expect(takenBack.length).toBe(3);
    const drafts = takenBack.map((id) => id.replace('final-', 'draft-'));
    const rejected = await cli('reject', 'm.yaml', ...drafts);
    expect(rejected.code, rejected.stderr).toBe(0);
    expect(rejected.stdout).toMatch(/taken back, unpaid/);
    const again = await runCliInProcess(ws.args(), ws.env, ws.dir);
    expect(again.code, again.stdout + again.stderr).toBe(1);
    expect(charges(t, ws).filter((c) => takenBack.includes(c.item))).toEqual([]);
    for (const id of takenBack) expect(stateOf(ws).get(id)!.state).toBe('skipped');
    // The finals not taken back were all made, each charged once.
    expect(charges(t, ws).filter((c) => c.item.startsWith('final-'))).toHaveLength(3);
  }, 90_000);
});

describe('the decision record', () => {
  it('keeps every decision, who took it and when: reject then approve holds both, and the results name the last', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, DRAFT_FINAL, { 'products.csv': 'sku,title\nA,Red mug\nB,Blue mug\n' });
    const cli = (env: Record<string, string>, ...args: string[]) =>
      runCliInProcess(args, { ...ws.env, ...env }, ws.dir);
    expect((await runCliInProcess(ws.args(), ws.env, ws.dir)).code).toBe(1);
    const before = Date.now();
    expect((await cli({}, 'reject', 'm.yaml', 'draft-A', '--by', 'ana', '--note', 'off\u001b[31m-model')).code).toBe(0);
    expect(
      (await cli({ GENBATCH_DECIDER: 'ben' }, 'approve', 'm.yaml', 'draft-A', '--note', 'fine after all')).code,
    ).toBe(0);
    const listed = await cli({}, 'decisions', 'm.yaml', '--json');
    expect(listed.code, listed.stderr).toBe(0);
    const record = JSON.parse(listed.stdout) as Record<string, unknown>[];
    // Newest first; nothing overwritten: the rejection and its note are there beside the approval.
    expect(record).toMatchObject([
      { itemId: 'draft-A', version: 1, decision: 'approved', by: 'ben', note: 'fine after all', unlocked: ['final-A'] },
      {
        itemId: 'draft-A',
        version: 1,
        decision: 'rejected',
        by: 'ana',
        note: 'off\u001b[31m-model',
        skipped: ['final-A'],
      },
    ]);
    for (const entry of record) expect(Date.parse(entry.at as string)).toBeGreaterThanOrEqual(before - 1_000);
    // The text never passes a note's control bytes to the terminal.
    const text = await cli({}, 'decisions', 'm.yaml');
    expect(text.stdout).toMatch(/2 decisions in .*m\.sqlite, newest first/);
    expect(text.stdout).toMatch(/draft-A v1 rejected by ana "off \[31m-model": skipped final-A/);
    expect(text.stdout).not.toContain('\u001b');
    // The results carry the current decision's author and time; the CSV no control byte.
    const rows = readFileSync(join(ws.outDir, 'results.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.find((r) => r.id === 'draft-A')).toMatchObject({ decidedBy: 'ben', decidedAt: record[0]!.at });
    expect(rows.find((r) => r.id === 'draft-B')).toMatchObject({ decidedBy: null, decidedAt: null });
    const csv = readFileSync(join(ws.outDir, 'results.csv'), 'utf8');
    expect(csv.split('\n')[0]).toMatch(/,reason,decided_by,decided_at$/);
    expect(csv).toContain(`,ben,${record[0]!.at as string}`);
    expect(csv).not.toContain('\u001b');
  }, 60_000);
});
