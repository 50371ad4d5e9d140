// The report a 100,000-item run leaves (results.jsonl/csv and the index.html gallery), from its state file alone.
// Goal: under 10 s and 400 MB, so the end of a big run is not a wait of its own; and the
// gallery, opened in Chromium, shows its first cards within 3 s and applies a filter within 1 s.
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fmt, measureCli } from './measure.mjs';
import { buildCatalogState } from './state.mjs';
import { chromiumLaunchOptions } from '../scripts/chromium.mjs';

const ITEMS = 100_000;
const GOAL = { seconds: 10, rssMb: 400, firstCardsMs: 3000, filterMs: 1000 };

export async function reportBench() {
  const dir = mkdtempSync(join(tmpdir(), 'genbatch-bench-report-'));
  const state = join(dir, 'big.sqlite');
  buildCatalogState(state, { items: ITEMS });
  writeFileSync(
    join(dir, 'big.yaml'),
    'version: 1\nname: big\nitems:\n  - { id: one, model: studio-xl, prompt: "the state holds the real items" }\n',
  );
  const out = join(dir, 'out');
  const r = await measureCli(['report', 'big.yaml', '--state', state, '--out', out, '--html'], { cwd: dir });
  if (r.code !== 0) throw new Error(`report exited ${r.code}: ${r.stderr}`);
  const pass = r.wallSeconds < GOAL.seconds && r.peakRssMb < GOAL.rssMb;
  const mb = (f) => fmt(statSync(join(out, f)).size / 1024 / 1024, 1);
  console.log(
    `report  ${ITEMS.toLocaleString('en-US')} items, --html: wall ${fmt(r.wallSeconds)} s, peak RSS ${fmt(r.peakRssMb, 0)} MB, ${fmt(r.cpuSeconds)} CPU-s (goal < ${GOAL.seconds} s, < ${GOAL.rssMb} MB): ${pass ? 'met' : 'MISSED'}`,
  );
  console.log(
    `report  files: index.html ${mb('index.html')} MB, results.jsonl ${mb('results.jsonl')} MB, results.csv ${mb('results.csv')} MB`,
  );
  return (await galleryInBrowser(join(out, 'index.html'))) && pass;
}

async function galleryInBrowser(file) {
  const browser = await chromium.launch(await chromiumLaunchOptions());
  try {
    const page = await browser.newPage();
    const started = Date.now();
    await page.goto(pathToFileURL(file).href, { timeout: 120_000 });
    await page.waitForSelector('.card');
    const firstCardsMs = Date.now() - started;
    const clicked = Date.now();
    await page.click('label.chip:has(input[value="done"])');
    const shown = await page.textContent('#shown');
    const filterMs = Date.now() - clicked;
    // A search as typed and a grouping by a rows column, over all 100,000 items.
    const searched = Date.now();
    await page.fill('#search', 'item 4');
    const searchShown = await page.textContent('#shown');
    const searchMs = Date.now() - searched;
    const grouped = Date.now();
    await page.selectOption('#group', 'title');
    await page.waitForSelector('.group');
    const groupMs = Date.now() - grouped;
    const pass =
      firstCardsMs < GOAL.firstCardsMs &&
      filterMs < GOAL.filterMs &&
      searchMs < GOAL.filterMs &&
      groupMs < GOAL.filterMs;
    console.log(
      `report  gallery in Chromium: first cards ${firstCardsMs} ms, a filter click ${filterMs} ms (${shown}), a search ${searchMs} ms (${searchShown}), grouping by a rows column ${groupMs} ms ` +
        `(goal < ${GOAL.firstCardsMs} ms, < ${GOAL.filterMs} ms each): ${pass ? 'met' : 'MISSED'}`,
    );
    return pass;
  } finally {
    await browser.close();
  }
}
