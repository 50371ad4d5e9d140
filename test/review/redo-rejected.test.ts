import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/index.js';
import { runCliInProcess } from '../helpers/cli.js';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';
import { decide as decideOne } from '../helpers/decide.js';

/** Decisions as `genbatch review` writes them: through the state, while no run or a run holds it. */
function decide(statePath: string, decisions: [id: string, version: number, decision: 'approved' | 'rejected'][]) {
  const { store } = Store.openForSteering(statePath);
  try {
    for (const [id, version, decision] of decisions)
      expect(decideOne(store, id, version, decision, null, Date.now())).toBe(true);
  } finally {
    store.close();
  }
}

const resultsOf = (outDir: string) =>
  readFileSync(join(outDir, 'results.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

describe('regenerating what review rejected', () => {
  it('estimate prices it; run --redo-rejected charges each rejected item once and keeps every earlier version', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(4));
    expect((await ws.run()).code).toBe(0);
    decide(ws.statePath, [
      ['item-0', 1, 'approved'],
      ['item-1', 1, 'rejected'],
      ['item-3', 1, 'rejected'],
    ]);
    const status = JSON.parse((await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir)).stdout);
    expect(status.review).toEqual({ approved: 1, rejected: 2, unreviewed: 1, rejectedByChecks: 0 });

    // studio-lite costs 2 a job: two rejects cost 4.
    const estimate = await runCliInProcess(['estimate', 'm.yaml', '--redo-rejected', '--json'], ws.env, ws.dir);
    expect(estimate.code, estimate.stderr).toBe(0);
    expect(JSON.parse(estimate.stdout).redoRejected).toEqual({ items: 2, credits: 4 });
    expect(JSON.parse(estimate.stdout).remaining.credits.total).toBe(4);

    const charges = t.sim.service.ledger.of('charge').length;
    const redo = await ws.run(['--redo-rejected']);
    expect(redo.code, redo.stderr).toBe(0);
    expect(redo.stderr).toMatch(/regenerating 2 items rejected in review/);
    const newCharges = t.sim.service.ledger.of('charge').slice(charges);
    expect(newCharges.map((c) => c.prompt).sort()).toEqual(['product 1', 'product 3']);

    const rows = resultsOf(ws.outDir);
    for (const id of ['item-1', 'item-3']) {
      const row = rows.find((r) => r.id === id);
      expect(row.files.map((f: { path: string }) => f.path)).toEqual([`${id}-1.v2.png`]);
      expect(row.review).toBeNull();
      expect(row.versions.map((v: any) => [v.version, v.current, v.review?.decision ?? null])).toEqual([
        [1, false, 'rejected'],
        [2, true, null],
      ]);
    }
    expect(rows.find((r) => r.id === 'item-0').review).toMatchObject({ version: 1, decision: 'approved' });
    expect(readState(ws.statePath).outputs).toHaveLength(6);
    // The static gallery shows the decisions, read-only; the sidecars carry them.
    expect((await runCliInProcess(['report', 'm.yaml', '--html', '--sidecars'], ws.env, ws.dir)).code).toBe(0);
    const sidecar = JSON.parse(readFileSync(join(ws.outDir, 'item-0-1.png.json'), 'utf8'));
    expect(sidecar.review).toMatchObject({ version: 1, decision: 'approved' });
    expect(readFileSync(join(ws.outDir, 'index.html'), 'utf8')).toContain(
      '"review":{"decision":"approved","note":null}',
    );

    // Nothing is rejected now (the new versions are unreviewed): a second --redo-rejected pays nothing.
    expect((await ws.run(['--redo-rejected'])).code).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(charges + 2);

    // retry --rejected puts back a rejected second version; the plain run makes version 3.
    decide(ws.statePath, [['item-1', 2, 'rejected']]);
    const retry = await runCliInProcess(['retry', 'm.yaml', '--rejected'], ws.env, ws.dir);
    expect(retry.stdout).toMatch(/1 item rejected in review put back/);
    expect((await ws.run()).code).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(charges + 3);
    expect(
      resultsOf(ws.outDir)
        .find((r) => r.id === 'item-1')
        .versions.map((v: any) => v.files[0]),
    ).toEqual(['item-1-1.png', 'item-1-1.v2.png', 'item-1-1.v3.png']);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('a decision is refused for a version the item does not have on disk', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(1));
    expect((await ws.run()).code).toBe(0);
    const { store } = Store.openForSteering(ws.statePath);
    try {
      expect(decideOne(store, 'item-0', 2, 'rejected', null, 1)).toBe(false);
      expect(decideOne(store, 'nope', 1, 'rejected', null, 1)).toBe(false);
      expect(store.reviews.ofItem('item-0')).toEqual([]);
    } finally {
      store.close();
    }
  });
});
