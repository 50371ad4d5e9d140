// genbatch review on the state of a 100,000-item catalog run, every output on disk, in headless Chromium.
// Goals: the first cards (their images decoded) within 1 s of opening the page; a filter or a search
// answers (cards drawn) within 200 ms; the server's peak RSS under 200 MB.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { chromiumLaunchOptions } from '../scripts/chromium.mjs';
import { fmt, measureCli } from './measure.mjs';
import { buildCatalogState } from './state.mjs';

const ITEMS = 100_000;
const GOAL = { firstCardsMs: 1000, answerMs: 200, rssMb: 200 };

export async function reviewBench() {
  const dir = mkdtempSync(join(tmpdir(), 'genbatch-bench-review-'));
  const state = join(dir, 'big.sqlite');
  const built = Date.now();
  buildCatalogState(state, { items: ITEMS, outDir: join(dir, 'out'), reviewed: true });
  console.log(
    `review  state of ${ITEMS.toLocaleString('en-US')} items with their outputs on disk built in ${fmt((Date.now() - built) / 1000, 1)} s`,
  );
  writeFileSync(
    join(dir, 'big.yaml'),
    'version: 1\nname: big\nitems:\n  - { id: one, model: studio-xl, prompt: "the state holds the real items" }\n',
  );
  let figures;
  const server = await measureCli(['review', 'big.yaml', '--state', state], {
    cwd: dir,
    during: (child) => {
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
        const url = /http:\/\/\S+/.exec(out)?.[0];
        if (!url || figures) return;
        figures = inBrowser(url).finally(() => child.kill('SIGINT'));
      });
    },
  });
  if (!figures) throw new Error(`review printed no URL (exit ${server.code}): ${server.stderr}`);
  const f = await figures;
  const answers = Object.entries(f.answers);
  const pass =
    f.firstCardsMs < GOAL.firstCardsMs &&
    answers.every(([, a]) => a.ms < GOAL.answerMs) &&
    server.peakRssMb < GOAL.rssMb;
  console.log(
    `review  first cards shown (images decoded) ${f.firstCardsMs} ms after opening the page (goal < ${GOAL.firstCardsMs} ms)`,
  );
  for (const [what, a] of answers)
    console.log(`review  ${what}: ${a.ms} ms to cards drawn (${a.shown}; the server answered in ${a.serverMs} ms)`);
  console.log(
    `review  a jump to the middle of the grid: ${f.scrollMs} ms to its cards drawn; cards in the DOM: ${f.cardsInDom}`,
  );
  console.log(
    `review  server peak RSS ${fmt(server.peakRssMb, 0)} MB, ${fmt(server.cpuSeconds)} CPU-s (goals: < ${GOAL.answerMs} ms each, < ${GOAL.rssMb} MB): ${pass ? 'met' : 'MISSED'}`,
  );
  return pass;
}

async function inBrowser(url) {
  const browser = await chromium.launch(await chromiumLaunchOptions());
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, locale: 'en-US' });
    const started = Date.now();
    await page.goto(url);
    await page.waitForFunction(() => {
      const images = Array.from(document.querySelectorAll('.card img')).slice(0, 10);
      return images.length === 10 && images.every((i) => i.complete && i.naturalWidth > 0);
    });
    const firstCardsMs = Date.now() - started;
    // The filters are timed once the page has drawn its plots and the rest of its first screen.
    await page.waitForSelector('#plots canvas');
    await page.waitForTimeout(500);
    const answers = {};
    // From the act to the grid drawn with the answer: the slice's response, then two frames.
    const answer = async (what, asked, act) => {
      await page.evaluate(() => performance.clearResourceTimings());
      const at = Date.now();
      // The response to this very query: the page asks for a slice of what the filters now say.
      const answered = page.waitForResponse((r) => r.url().includes('/api/items') && r.url().includes(asked));
      await act();
      await answered;
      await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
      const ms = Date.now() - at;
      const serverMs = await page.evaluate(() => {
        const asked = performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/items'));
        return Math.round(Math.max(...asked.map((e) => e.responseEnd - e.requestStart)));
      });
      answers[what] = { ms, serverMs, shown: await page.textContent('#shown') };
    };
    await answer('review filter "rejected"', 'review=rejected', () => page.selectOption('#f-review', 'rejected'));
    await answer('review filter "unreviewed"', 'review=unreviewed', () => page.selectOption('#f-review', 'unreviewed'));
    await answer('back to all', 'offset=0&limit=120&token=', () => page.selectOption('#f-review', ''));
    await answer('state filter "failed"', 'state=failed', () => page.selectOption('#f-state', 'failed'));
    await page.selectOption('#f-state', '');
    await answer('model filter "studio-lite"', 'model=studio-lite', () => page.selectOption('#f-model', 'studio-lite'));
    await page.selectOption('#f-model', '');
    await answer('search "item 4242"', 'q=item%204242', () => page.fill('#f-search', 'item 4242'));
    await answer('search "glazed" (every item matches)', 'q=glazed', () => page.fill('#f-search', 'glazed'));
    await answer('search "nothing-matches"', 'q=nothing-matches', () => page.fill('#f-search', 'nothing-matches'));
    await page.fill('#f-search', '');
    await page.waitForFunction(() => document.getElementById('shown').textContent === '100,000 shown');
    const scrolled = Date.now();
    await page.evaluate(() => {
      const s = document.getElementById('scroller');
      s.scrollTop = s.scrollHeight / 2;
    });
    await page.waitForFunction(() => {
      const top = document.getElementById('scroller').scrollTop;
      return Array.from(document.querySelectorAll('.card img')).some(
        (i) => Math.abs(i.closest('.card').offsetTop - top) < 600 && i.complete && i.naturalWidth > 0,
      );
    });
    const scrollMs = Date.now() - scrolled;
    const cardsInDom = await page.$$eval('.card', (cards) => cards.length);
    return { firstCardsMs, answers, scrollMs, cardsInDom };
  } finally {
    await browser.close();
  }
}
