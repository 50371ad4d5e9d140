/// <reference lib="dom" />
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { openSqlite } from '../../src/store/driver.js';
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/index.js';
import { launchChromium } from '../helpers/browser.js';
import { runCliInProcess } from '../helpers/cli.js';
import { startTestReview } from '../helpers/review.js';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';
import { FolderSink } from '../../src/sink/index.js';
import { MemorySink } from '../helpers/memory-sink.js';
import { decide } from '../helpers/decide.js';

const SCREENSHOT = resolve('test-artifacts/review.png');

/** The page in a browser whose language Intl accepts (a POSIX locale's "en-US@posix" is not). */
async function openReview(browser: Browser, url: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, locale: 'en-US' });
  const errors: string[] = [];
  // When the first card was put in the grid, in the page's clock.
  await page.addInitScript(() => {
    new MutationObserver((_, seen) => {
      if (!document.querySelector('.card')) return;
      (window as unknown as { firstCardAt: number }).firstCardAt = performance.now();
      seen.disconnect();
    }).observe(document, { childList: true, subtree: true });
  });
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  // Not its load event: that waits for every image on screen, and a thumbnail may still be being made.
  await page.goto(url, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('.card');
  // The first cards come inside the page: no question about the grid went before them.
  const askedBefore = await page.evaluate(() => {
    const at = (window as unknown as { firstCardAt: number }).firstCardAt;
    return performance
      .getEntriesByType('resource')
      .filter((e) => e.name.includes('/api/items') && e.startTime < at)
      .map((e) => e.name);
  });
  expect(askedBefore).toEqual([]);
  (page as Page & { errors: string[] }).errors = errors;
  return page;
}

/** Each card's id and decision as the page shows them, in order. */
const cardsShown = (page: Page) =>
  page.$$eval('.card', (cards) =>
    cards.map((c) => [(c as HTMLElement).dataset.id!, (c as HTMLElement).dataset.decision!] as const),
  );

function decisionsIn(statePath: string): Record<string, [number, string, string | null]> {
  const db = openSqlite(statePath, { readonly: true });
  try {
    const rows = db.prepare('SELECT item_id, version, decision, note FROM reviews ORDER BY item_id').all() as {
      item_id: string;
      version: number;
      decision: string;
      note: string | null;
    }[];
    return Object.fromEntries(rows.map((r) => [r.item_id, [r.version, r.decision, r.note]]));
  } finally {
    db.close();
  }
}

describe('genbatch review in a browser', () => {
  it('reviews with the keyboard: approve, reject, a note, a range, undo, zoom, filters; decisions persist', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(6));
    expect((await ws.run()).code).toBe(0);
    const opts = { statePath: ws.statePath, outputs: new FolderSink(ws.outDir), title: 'catalog', budget: 100 };
    const first = await startTestReview(opts);
    const browser = await launchChromium();
    const page = await openReview(browser, first.url);
    await page.waitForFunction(() => document.querySelectorAll('.card').length === 6);
    expect((await cardsShown(page)).map(([id]) => id)).toEqual([0, 1, 2, 3, 4, 5].map((i) => `item-${i}`));

    await page.keyboard.press('a'); // item-0 approved, the focus moves on
    await page.keyboard.press('r'); // item-1 rejected
    await page.keyboard.press('n'); // item-2: a note, saved as a rejection; the focus moves on to item-3
    await page.keyboard.type('too dark');
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      () => document.querySelector('.card[data-id=item-2]')?.getAttribute('data-decision') === 'rejected',
    );
    await page.keyboard.press('Shift+ArrowRight');
    await page.keyboard.press('Shift+ArrowRight'); // item-3 to item-5 selected
    expect(await page.textContent('#selection')).toBe('3 selected');
    await page.keyboard.press('a');
    await page.waitForFunction(
      () => document.querySelector('.card[data-id=item-5]')?.getAttribute('data-decision') === 'approved',
    );
    await page.keyboard.press('z'); // undo: the range is unreviewed again
    await page.waitForFunction(
      () => document.querySelector('.card[data-id=item-5]')?.getAttribute('data-decision') === 'unreviewed',
    );
    expect(await cardsShown(page)).toEqual([
      ['item-0', 'approved'],
      ['item-1', 'rejected'],
      ['item-2', 'rejected'],
      ['item-3', 'unreviewed'],
      ['item-4', 'unreviewed'],
      ['item-5', 'unreviewed'],
    ]);
    expect(decisionsIn(ws.statePath)).toEqual({
      'item-0': [1, 'approved', null],
      'item-1': [1, 'rejected', null],
      'item-2': [1, 'rejected', 'too dark'],
    });
    await page.waitForFunction(() => document.querySelector('[data-stat=rejected] b')?.textContent === '2');

    // Zoom: Enter opens the lightbox on the focused card, arrows walk, Escape closes.
    await page.keyboard.press('Escape');
    await page.keyboard.press('Home');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#lightbox:not([hidden]) #lb-body img');
    expect(await page.textContent('#lb-pos')).toMatch(/^1 of 6 · item-0 · approved/);
    await page.keyboard.press('ArrowRight');
    await page.waitForFunction(() => /^2 of 6 · item-1/.test(document.getElementById('lb-pos')!.textContent!));
    await page.keyboard.press('Escape');
    expect(await page.isHidden('#lightbox')).toBe(true);

    // Filters: by decision, and a search.
    await page.selectOption('#f-review', 'rejected');
    await page.waitForFunction(() => document.getElementById('shown')!.textContent === '2 shown');
    expect((await cardsShown(page)).map(([id]) => id)).toEqual(['item-1', 'item-2']);
    await page.selectOption('#f-review', '');
    await page.fill('#f-search', 'product 4');
    await page.waitForFunction(() => document.getElementById('shown')!.textContent === '1 shown');
    expect((await cardsShown(page)).map(([id]) => id)).toEqual(['item-4']);
    // Every item matches: the first cards come before the count, and the grid grows to it.
    await page.fill('#f-search', 'product');
    await page.waitForFunction(() => document.getElementById('shown')!.textContent === '6 shown');
    expect((await cardsShown(page)).map(([id]) => id)).toEqual([
      'item-0',
      'item-1',
      'item-2',
      'item-3',
      'item-4',
      'item-5',
    ]);
    await page.fill('#f-search', '');
    await page.waitForFunction(() => document.getElementById('shown')!.textContent === '6 shown');
    await page.screenshot({ path: SCREENSHOT });
    expect((page as Page & { errors: string[] }).errors).toEqual([]);

    // A new server on the same state: the decisions are there.
    await first.close();
    const second = await startTestReview(opts);
    const again = await openReview(browser, second.url);
    await again.waitForFunction(() => document.querySelectorAll('.card').length === 6);
    expect((await cardsShown(again)).slice(0, 3)).toEqual([
      ['item-0', 'approved'],
      ['item-1', 'rejected'],
      ['item-2', 'rejected'],
    ]);

    // And in the results files.
    expect((await runCliInProcess(['report', 'm.yaml'], ws.env, ws.dir)).code).toBe(0);
    const rows = readFileSync(join(ws.outDir, 'results.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.map((r) => r.review && [r.review.decision, r.review.note])).toEqual([
      ['approved', null],
      ['rejected', null],
      ['rejected', 'too dark'],
      null,
      null,
      null,
    ]);
  });

  it('filters by tag, finds accented words without accents, and shows each card as a thumbnail', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(
      t.sim,
      `version: 1
defaults: { model: studio-lite }
items:
  - { id: mug, prompt: "Crème mug", tags: [spring] }
  - { id: bowl, prompt: "Plain bowl", tags: [autumn] }
  - { id: vase, prompt: "Café vase", tags: [spring, sale] }
`,
    );
    expect((await ws.run()).code).toBe(0);
    const server = await startTestReview({
      statePath: ws.statePath,
      outputs: new FolderSink(ws.outDir),
      title: 'tags',
      budget: null,
    });
    // The server made the first screen's thumbnails as it started, before any page asked for one.
    const kept = ws.statePath.replace(/\.sqlite$/, '.thumbs');
    const made = () => (existsSync(kept) ? readdirSync(kept).filter((f) => f.endsWith('.webp')).length : 0);
    await expect.poll(made, { timeout: 20_000, interval: 20 }).toBe(3);
    const browser = await launchChromium();
    const page = await openReview(browser, server.url);
    await page.waitForFunction(() => document.querySelectorAll('.card').length === 3);
    // The run's plots are drawn once the first screen is shown (uPlot loads after the page's own script).
    await page.waitForSelector('#plots canvas');
    // Each wait is bounded, and one that runs out says where the page stood: which step, which images.
    const until = (step: string, state: () => boolean) =>
      page.waitForFunction(state, undefined, { timeout: 10_000 }).catch(async (error: unknown) => {
        const where = await page.evaluate(() => ({
          shown: document.getElementById('shown')?.textContent,
          images: Array.from(document.querySelectorAll<HTMLImageElement>('.card img, #newest-strip img')).map((i) => [
            i.src.slice(0, 48),
            i.dataset.thumb?.slice(0, 48),
            i.complete,
            i.naturalWidth,
          ]),
          asked: performance.getEntriesByType('resource').map((e) => [e.name.slice(22, 70), Math.round(e.duration)]),
        }));
        throw new Error(`${step}: ${JSON.stringify(where)}`, { cause: error });
      });
    const decoded = (step: string) =>
      until(step, () =>
        Array.from(document.querySelectorAll<HTMLImageElement>('.card img')).every(
          (i) => i.complete && i.naturalWidth > 0,
        ),
      );
    // Each card shows a thumbnail the server made, decoded: the first screen's came inside the page.
    await decoded('first');
    const sources = () => page.$$eval('.card img', (images) => images.map((i) => (i as HTMLImageElement).src));
    expect((await sources()).map((src) => src.split(',')[0])).toEqual(Array(3).fill('data:image/webp;base64'));
    expect(
      await page.evaluate(() => {
        // The newest strip's thumbnails are asked for once the first screen is shown: none before.
        const at = (window as unknown as { firstCardAt: number }).firstCardAt;
        return performance
          .getEntriesByType('resource')
          .filter((e) => e.name.includes('/thumbs/') && e.startTime < at)
          .map((e) => e.name);
      }),
    ).toEqual([]);
    // The tag filter appears with the tags the items have.
    await page.waitForSelector('#f-tag-label:not([hidden])');
    expect(await page.$$eval('#f-tag option', (o) => o.map((x) => (x as HTMLOptionElement).value))).toEqual([
      '',
      'autumn',
      'sale',
      'spring',
    ]);
    await page.selectOption('#f-tag', 'spring');
    await until('tag spring', () => document.getElementById('shown')!.textContent === '2 shown');
    expect((await cardsShown(page)).map(([id]) => id)).toEqual(['mug', 'vase']);
    // A slice asked for later names its thumbnails, asked for one by one.
    await decoded('filtered');
    expect((await sources()).map((src) => new URL(src).pathname)).toEqual(['/thumbs/mug-1.png', '/thumbs/vase-1.png']);
    await page.fill('#f-search', 'CAFE');
    await until('search CAFE', () => document.getElementById('shown')!.textContent === '1 shown');
    expect((await cardsShown(page)).map(([id]) => id)).toEqual(['vase']);
    expect((page as Page & { errors: string[] }).errors).toEqual([]);
  });

  it("compares an item's versions side by side after its reject was regenerated", async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(2));
    expect((await ws.run()).code).toBe(0);
    const { store } = Store.openForSteering(ws.statePath);
    decide(store, 'item-1', 1, 'rejected', 'wrong colour', Date.now());
    store.close();
    expect((await ws.run(['--redo-rejected'])).code).toBe(0);
    const server = await startTestReview({
      statePath: ws.statePath,
      outputs: new FolderSink(ws.outDir),
      title: 'm',
      budget: null,
    });
    const page = await openReview(await launchChromium(), server.url);
    await page.waitForFunction(() => document.querySelectorAll('.card').length === 2);
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('c');
    await page.waitForFunction(() => document.querySelectorAll('#lb-body figure img').length === 2);
    const captions = await page.$$eval('#lb-body figcaption', (fs) => fs.map((f) => f.textContent));
    expect(captions).toEqual(['v1 rejected: wrong colour', 'v2 (current) unreviewed']);
    const sources = await page.$$eval('#lb-body figure img', (imgs) =>
      imgs.map((i) => decodeURIComponent(new URL((i as HTMLImageElement).src).pathname)),
    );
    expect(sources).toEqual(['/files/item-1-1.png', '/files/item-1-1.v2.png']);
    await page.waitForFunction(() =>
      Array.from(document.querySelectorAll<HTMLImageElement>('#lb-body img')).every((i) => i.naturalWidth > 0),
    );
  });

  it("draws the run's plots when their script runs after the live feed's first series", async () => {
    // On a loaded machine uPlot's script, after the page's own, ran after the feed's first series: the plots said
    // they could not be drawn, and once the run had ended nothing changed to draw them again.
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(2));
    expect((await ws.run()).code).toBe(0);
    const server = await startTestReview({
      statePath: ws.statePath,
      outputs: new FolderSink(ws.outDir),
      title: 'm',
      budget: null,
    });
    const browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, locale: 'en-US' });
    // The feed's series, as the page hears them.
    await page.addInitScript(() => {
      const Base = window.EventSource;
      window.EventSource = class extends Base {
        constructor(url: string | URL, init?: EventSourceInit) {
          super(url, init);
          this.addEventListener('series', () => {
            (window as unknown as { seriesIn: boolean }).seriesIn = true;
          });
        }
      };
    });
    // uPlot's script held until the first series is in.
    await page.route('**/uplot.js*', async (route) => {
      await expect
        .poll(() => page.evaluate(() => (window as unknown as { seriesIn?: boolean }).seriesIn === true), {
          timeout: 10_000,
        })
        .toBe(true);
      await route.continue();
    });
    await page.goto(server.url, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('#plots canvas', { timeout: 10_000 });
    expect(await page.locator('#plots .plots-empty').count()).toBe(0);
  });

  it('answers a filter while every thumbnail on screen is still being made', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(30));
    expect((await ws.run()).code).toBe(0);
    // The outputs as a bucket holds them, each read held until the test lets go: no thumbnail can be made yet.
    let release!: () => void;
    const held = new Promise<void>((done) => {
      release = done;
    });
    const outputs = new (class extends MemorySink {
      override async open(relPath: string) {
        await held;
        return super.open(relPath);
      }
    })();
    for (const f of readdirSync(ws.outDir).filter((f) => f.endsWith('.png')))
      outputs.files.set(f, { bytes: readFileSync(join(ws.outDir, f)), mtimeMs: 1 });
    const server = await startTestReview({ statePath: ws.statePath, outputs, title: 'm', budget: null });
    const page = await openReview(await launchChromium(), server.url);
    await page.waitForFunction(() => document.querySelectorAll('.card').length >= 10);
    // The browser's six connections to the server are not all held by thumbnails: a question gets through.
    await page.selectOption('#f-review', 'rejected');
    await page.waitForFunction(() => document.getElementById('shown')!.textContent === '0 shown', undefined, {
      timeout: 10_000,
    });
    release();
    await page.selectOption('#f-review', '');
    await page.waitForFunction(() => {
      const images = Array.from(document.querySelectorAll<HTMLImageElement>('.card img'));
      return images.length >= 10 && images.every((i) => i.complete && i.naturalWidth > 0);
    });
    expect((page as Page & { errors: string[] }).errors).toEqual([]);
  });

  it('shows a concurrent run live: each output is on the page within a second of its download', async () => {
    // Jobs of half a second (the service's 30 s at x60), three at a time: the 11 downloads come in four waves
    // at least 1.5 s apart from first to last, while the page watches.
    const t = await startTestSim({ timeScale: 60, imageSeconds: [30, 30] });
    const ws = workspace(t.sim, imageManifest(12), {}, 60);
    expect((await ws.run(['--only', 'item-0'])).code).toBe(0);
    const server = await startTestReview({
      statePath: ws.statePath,
      outputs: new FolderSink(ws.outDir),
      title: 'm',
      budget: null,
      liveEveryMs: 500,
    });
    const page = await openReview(await launchChromium(), server.url);
    // The page notes when each item first appears in its newest strip.
    await page.evaluate(() => {
      const seen: Record<string, number> = {};
      (window as unknown as { seen: Record<string, number> }).seen = seen;
      new MutationObserver(() => {
        for (const node of Array.from(document.querySelectorAll<HTMLElement>('#newest-strip [data-item]')))
          seen[node.dataset.item!] ??= Date.now();
      }).observe(document.getElementById('newest-strip')!, { childList: true });
    });
    const run = ws.start(['--max-images-in-flight', '3']);
    const [code] = await once(run.child, 'exit');
    expect(code, run.output()).toBe(0);
    // Every output reaches the newest strip, and the grid shows all twelve.
    await page.waitForFunction(() => {
      const seen = (window as unknown as { seen: Record<string, number> }).seen;
      return Array.from({ length: 11 }, (_, i) => `item-${i + 1}`).every((id) => id in seen);
    });
    await page.waitForFunction(() => document.querySelectorAll('.card[data-decision=unreviewed]').length === 12);
    const seen = await page.evaluate(() => (window as unknown as { seen: Record<string, number> }).seen);
    const db = openSqlite(ws.statePath, { readonly: true });
    const downloads = db
      .prepare("SELECT item_id, downloaded_at FROM outputs WHERE item_id <> 'item-0' ORDER BY downloaded_at")
      .all() as { item_id: string; downloaded_at: number }[];
    db.close();
    expect(downloads).toHaveLength(11);
    const lags = downloads.map((d) => [d.item_id, seen[d.item_id]! - d.downloaded_at] as const);
    for (const [id, lag] of lags) expect(lag, `${id} appeared ${lag} ms after its download`).toBeLessThan(1_000);
    // The downloads were spread over the run (three slots make waves), not one burst: the page followed it.
    expect(downloads.at(-1)!.downloaded_at - downloads[0]!.downloaded_at).toBeGreaterThan(1_000);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });
});
