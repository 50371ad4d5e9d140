import { describe, expect, it } from 'vitest';
import { FolderSink } from '../../src/sink/index.js';
import { runCliInProcess } from '../helpers/cli.js';
import { DRAFT_FINAL_VIDEO } from '../helpers/manifests.js';
import { raw, startTestReview } from '../helpers/review.js';
import { readState, workspace, type RunWorkspace } from '../helpers/run.js';
import { startTestSim, type TestSim } from '../helpers/sim.js';

/** The credits the service charged for these items, by the state that knows their jobs. */
function chargedFor(t: TestSim, ws: RunWorkspace, ids: readonly string[]): number {
  const itemOf = new Map(readState(ws.statePath).attempts.map((a) => [a.job_id, a.item_id]));
  return t.sim.service.ledger
    .of('charge')
    .filter((c) => ids.includes(itemOf.get(c.jobId) ?? ''))
    .reduce((sum, c) => sum + c.credits, 0);
}

describe('the cost of a decision, where it is made, is what the service then charges', () => {
  it("estimate's gated credits, the card's unlocks and 'up to', approve's figures and status all agree with the charges", async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, DRAFT_FINAL_VIDEO, { 'products.csv': 'sku,title\nA,Red mug\nB,Blue mug\n' });
    const cli = async (...args: string[]) => {
      const r = await runCliInProcess(args, ws.env, ws.dir);
      expect(r.code, r.stderr).toBeLessThan(2);
      return r;
    };
    const run = () => runCliInProcess(ws.args(), ws.env, ws.dir);

    const before = JSON.parse((await cli('estimate', 'm.yaml', '--json')).stdout);
    const final = before.models.find((m: { model: string }) => m.model === 'studio-xl').each as number;
    const spin = before.models.find((m: { model: string }) => m.model === 'motion-2').each as number;
    expect(before.gated).toEqual({
      items: 4,
      credits: 2 * (final + spin),
      unpriced: 0,
      byTimeout: { items: 0, credits: 0 },
    });

    expect((await run()).code).toBe(1);
    const status = JSON.parse((await cli('status', 'm.yaml', '--json')).stdout);
    // The drafts can be decided now; the finals, gates of the videos, are not made yet.
    expect(status.decisions.gates).toEqual([
      { id: 'draft-A', waiting: 1, credits: final, made: true },
      { id: 'draft-B', waiting: 1, credits: final, made: true },
      { id: 'final-A', waiting: 1, credits: spin, made: false },
      { id: 'final-B', waiting: 1, credits: spin, made: false },
    ]);
    expect(status.waiting.filter((w: { state: string }) => w.state === 'waiting')).toEqual([
      { state: 'waiting', items: status.items.waiting, for: expect.stringMatching(/a person's decision on its gates/) },
    ]);

    // The card: what approving unlocks now, and up to what the chain behind it may spend.
    const review = await startTestReview({
      statePath: ws.statePath,
      outputs: new FolderSink(ws.outDir),
      title: 'm',
      budget: null,
    });
    const page = JSON.parse((await raw(review.base, 'GET', `/api/items?token=${review.token}&review=decide`)).body) as {
      cards: { id: string; unlocks: unknown }[];
    };
    const card = page.cards.find((c) => c.id === 'draft-A')!;
    expect(card.unlocks).toEqual({ items: 1, credits: final, upTo: { items: 2, credits: final + spin } });
    await review.close();

    // approve says the same, and the chain's approvals then charge exactly the card's "up to".
    const approved = JSON.parse((await cli('approve', 'm.yaml', 'draft-A', '--json')).stdout).decisions[0];
    expect(approved).toMatchObject({
      unlocked: ['final-A'],
      credits: { unlocked: final },
      upTo: { items: 2, credits: final + spin },
    });
    expect((await run()).code).toBe(1);
    await cli('approve', 'm.yaml', 'final-A');
    expect((await run()).code).toBe(1);
    expect(chargedFor(t, ws, ['final-A', 'spin-A'])).toBe(final + spin);

    // Rejected, then priced for a redo: the draft again, and the final it skipped, back to wait for the new version
    // (the video still waits on the final).
    await cli('reject', 'm.yaml', 'draft-B');
    const redo = JSON.parse((await cli('estimate', 'm.yaml', '--redo-rejected', '--json')).stdout);
    const draft = before.models.find((m: { model: string }) => m.model === 'studio-lite').each as number;
    expect(redo.redoRejected).toEqual({ items: 2, credits: draft + final });
    expect(redo.remaining.gated).toMatchObject({ items: 2, credits: final + spin });
    const text = (await cli('estimate', 'm.yaml', '--redo-rejected')).stdout;
    expect(text).toMatch(
      new RegExp(
        `of it, gated: 2 items, ${final + spin} credits, paid only once their gates are approved; ${draft} credits spent now`,
      ),
    );
  }, 90_000);

  it('estimate counts apart what an approval timeout approves by itself, and says it is spent unless someone rejects', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const manifest = DRAFT_FINAL_VIDEO.replace(
      '    model: studio-lite\n',
      '    model: studio-lite\n    approval: { timeout: 48h, onTimeout: approve }\n',
    );
    const ws = workspace(t.sim, manifest, { 'products.csv': 'sku,title\nA,Red mug\n' });
    const json = JSON.parse((await runCliInProcess(['estimate', 'm.yaml', '--json'], ws.env, ws.dir)).stdout);
    const final = json.models.find((m: { model: string }) => m.model === 'studio-xl').each as number;
    // The final goes by itself once the draft's timeout passes; the video still needs a person to approve the final.
    expect(json.gated.byTimeout).toEqual({ items: 1, credits: final });
    const text = (await runCliInProcess(['estimate', 'm.yaml'], ws.env, ws.dir)).stdout;
    expect(text).toMatch(
      /of them 1 item, \d+ credits, an approval timeout approves by itself: spent once it passes unless someone rejects in time/,
    );
    // status gives the draft's deadline, once it is made.
    expect((await runCliInProcess(ws.args(), ws.env, ws.dir)).code).toBe(1);
    const status = JSON.parse((await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir)).stdout);
    const gate = status.decisions.gates.find((g: { id: string }) => g.id === 'draft-A');
    expect(gate).toMatchObject({ made: true, onTimeout: 'approve' });
    // 48 h of the service's time at x600 is 288 s of real time after the draft was made.
    const made = readState(ws.statePath).outputs.find((o) => o.item_id === 'draft-A')!;
    expect(Date.parse(gate.deadline)).toBeGreaterThan(Date.now());
    expect(Date.parse(gate.deadline) - Date.now()).toBeLessThanOrEqual(288_000);
    expect(made).toBeDefined();
  }, 60_000);
});
