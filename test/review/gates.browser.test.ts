/// <reference lib="dom" />
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { FolderSink } from '../../src/sink/index.js';
import { launchChromium } from '../helpers/browser.js';
import { startCli } from '../helpers/cli.js';
import { startTestReview } from '../helpers/review.js';
import { readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';
import { DRAFT_FINAL } from '../helpers/manifests.js';

describe('review built for deciding', () => {
  it('the decide filter lists the gates with what each unlocks; a bulk approve while run --wait-for-decisions waits sends them within 2 s', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, DRAFT_FINAL, { 'products.csv': 'sku,title\nA,Red mug\nB,Blue mug\nC,Green mug\n' });
    const run = startCli(ws.args(['--wait-for-decisions']), ws.env, ws.dir);
    await run.waitFor(/3 items wait for a decision/);
    const review = await startTestReview({
      statePath: ws.statePath,
      outputs: new FolderSink(ws.outDir),
      title: 'm',
      budget: null,
    });
    const browser = await launchChromium();
    onTestFinished(() => browser.close());
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, locale: 'en-US' });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(review.url, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('.card');

    // Only what can be decided now: the three drafts, each saying what approving it lets go, with its row's values.
    await page.selectOption('#f-review', 'decide');
    await page.waitForFunction(() => document.getElementById('shown')!.textContent === '3 shown');
    const cards = await page.$$eval('.card', (nodes) =>
      nodes.map((n) => [
        (n as HTMLElement).dataset.id,
        n.querySelector('.unlocks')?.textContent,
        n.querySelector('.values')?.textContent,
      ]),
    );
    expect(cards).toEqual([
      ['draft-A', 'unlocks 1 item, 8 credits', 'sku: A · title: Red mug'],
      ['draft-B', 'unlocks 1 item, 8 credits', 'sku: B · title: Blue mug'],
      ['draft-C', 'unlocks 1 item, 8 credits', 'sku: C · title: Green mug'],
    ]);

    // A selection says what it would let go before it is approved, from the keyboard.
    await page.keyboard.press('Shift+ArrowRight');
    expect(await page.textContent('#selection')).toBe('2 selected · approving unlocks 2 items, 16 credits');
    const charges = () => t.sim.service.ledger.of('charge').length;
    expect(charges()).toBe(3);
    await page.keyboard.press('a');
    const approvedAt = Date.now();
    while (charges() < 5 && Date.now() - approvedAt < 10_000) await new Promise((r) => setTimeout(r, 20));
    expect(Date.now() - approvedAt).toBeLessThan(2_000);
    await run.waitFor(/1 item waits for a decision/);
    // The service charges before the run records the job it answered with: the state is waited for, not a clock.
    const known = () => new Set(readState(ws.statePath).attempts.flatMap((a) => (a.job_id ? [a.job_id] : [])));
    while (t.sim.service.ledger.of('charge').some((c) => !known().has(c.jobId)))
      await new Promise((r) => setTimeout(r, 20));
    const itemOf = new Map(readState(ws.statePath).attempts.map((a) => [a.job_id, a.item_id]));
    expect(
      t.sim.service.ledger
        .of('charge')
        .map((c) => itemOf.get(c.jobId))
        .sort(),
    ).toEqual(['draft-A', 'draft-B', 'draft-C', 'final-A', 'final-B']);
    // The results files carry the decisions at once, with no report run.
    const results = join(ws.outDir, 'results.jsonl');
    const reviewOf = (id: string) =>
      (existsSync(results) ? readFileSync(results, 'utf8') : '')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
        .find((row) => row.id === id)?.review?.decision;
    while (reviewOf('draft-B') !== 'approved' && Date.now() - approvedAt < 10_000)
      await new Promise((r) => setTimeout(r, 50));
    expect([reviewOf('draft-A'), reviewOf('draft-B'), reviewOf('draft-C')]).toEqual([
      'approved',
      'approved',
      undefined,
    ]);
    expect(errors).toEqual([]);
  }, 60_000);

  for (const filter of ['decide', 'unreviewed'] as const)
    it(`a, a in the ${filter} filter decides exactly the first two cards shown, whenever the view shifts`, async () => {
      const t = await startTestSim({ timeScale: 600 });
      const skus = ['A', 'B', 'C', 'D', 'E'];
      const ws = workspace(t.sim, DRAFT_FINAL, {
        'products.csv': `sku,title\n${skus.map((s) => `${s},Mug ${s}`).join('\n')}\n`,
      });
      expect((await ws.run()).code).toBe(1);
      const review = await startTestReview({
        statePath: ws.statePath,
        outputs: new FolderSink(ws.outDir),
        title: 'm',
        budget: null,
      });
      const browser = await launchChromium();
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, locale: 'en-US' });
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(review.url, { waitUntil: 'domcontentloaded' });
      await page.waitForSelector('.card');
      await page.selectOption('#f-review', filter);
      await page.waitForFunction(() => document.getElementById('shown')!.textContent === '5 shown');
      const shown = () => page.$$eval('.card', (nodes) => nodes.map((n) => (n as HTMLElement).dataset.id));
      const focused = () => page.$eval('.card.focus', (n) => (n as HTMLElement).dataset.id);
      expect(await shown()).toEqual(['draft-A', 'draft-B', 'draft-C', 'draft-D', 'draft-E']);
      expect(await focused()).toBe('draft-A');
      // The first decision; the view then drops the decided card (the live view reloads the filter): the focus is on
      // the card that took its place, the one the person sees there.
      await page.keyboard.press('a');
      await page.waitForFunction(() => document.getElementById('shown')!.textContent === '4 shown');
      expect(await shown()).toEqual(['draft-B', 'draft-C', 'draft-D', 'draft-E']);
      expect(await focused()).toBe('draft-B');
      await page.keyboard.press('a');
      await page.waitForFunction(() => document.getElementById('shown')!.textContent === '3 shown');
      expect(await focused()).toBe('draft-C');
      // Two more at once, before the view has shifted: still the cards in the order shown.
      await page.keyboard.press('a');
      await page.keyboard.press('a');
      await page.waitForFunction(() => document.getElementById('shown')!.textContent === '1 shown');
      expect(await shown()).toEqual(['draft-E']);
      const decided = () => {
        const rows = readState(ws.statePath);
        return new Set(rows.items.filter((i) => i.state === 'pending' && i.id.startsWith('final-')).map((i) => i.id));
      };
      expect([...decided()].sort()).toEqual(['final-A', 'final-B', 'final-C', 'final-D']);
      expect(errors).toEqual([]);
    }, 60_000);
});
