/// <reference lib="dom" />
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { renderGallery, type ResultRow } from '../../src/report/index.js';
import { makePng } from '../../src/simulator/media.js';
import { launchChromium } from '../helpers/browser.js';
import { runCli } from '../helpers/cli.js';
import { workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

const SCREENSHOT = resolve('test-artifacts/gallery.png');

const MANIFEST = `version: 1
items:
  - { id: hero, model: studio-xl, prompt: "A <b>mug</b> & \\"quotes\\" on a table" }
  - { id: lite, model: studio-lite, prompt: "A cheap mug" }
  - { id: doomed, model: studio-lite, prompt: "This one fails [sim:fail]" }
  - { id: naughty, model: studio-lite, prompt: "Blocked [sim:block]" }
  - { id: spin, type: video, model: motion-2, prompt: "Spin the hero", duration: 5, resolution: 720p, image: { from: hero } }
  - { id: spin-local, type: video, model: motion-2, prompt: "Spin the local mug", duration: 5, resolution: 720p, image: mug.png }
  - { id: spin-doomed, type: video, model: motion-2, prompt: "Never runs", duration: 5, resolution: 720p, image: { from: doomed } }
`;

interface Row {
  id: string;
  state: string;
  files: { path: string }[];
  errorCode: string | null;
  errorMessage: string | null;
  creditsCharged: number;
  creditsRefunded: number;
}

const visibleIds = (page: Page) =>
  page.$$eval('.card', (cards) =>
    cards.filter((c) => !(c as HTMLElement).hidden).map((c) => (c as HTMLElement).dataset.id),
  );

/** Every image decoded and every video playable, as a person opening the file would see them. */
async function mediaShown(
  page: Page,
): Promise<{ images: string[]; videos: { src: string; poster: string; width: number }[] }> {
  await page.waitForFunction(() => Array.from(document.images).every((i) => i.complete));
  const images = await page.$$eval('.card img', (imgs) =>
    imgs
      .filter((i) => (i as HTMLImageElement).naturalWidth > 0)
      .map((i) => (i as HTMLImageElement).getAttribute('src')!),
  );
  const videos = await page.$$eval('.card video', (vs) =>
    Promise.all(
      vs.map(
        (el) =>
          new Promise<{ src: string; poster: string; width: number }>((done, fail) => {
            const v = el as HTMLVideoElement;
            v.muted = true;
            v.addEventListener(
              'loadeddata',
              () => done({ src: v.getAttribute('src')!, poster: v.getAttribute('poster') ?? '', width: v.videoWidth }),
              { once: true },
            );
            v.addEventListener(
              'error',
              () => fail(new Error(`${v.getAttribute('src')} cannot play: media error ${v.error?.code}`)),
              { once: true },
            );
            v.load();
          }),
      ),
    ),
  );
  return { images, videos };
}

describe('the gallery, opened in headless Chromium from the file system', () => {
  it('shows every output, filters by state and model, and shows why an item failed', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, MANIFEST, { 'mug.png': makePng('local mug') });
    const run = await ws.run(['--max-retries', '0']);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/gallery: .*index\.html/);
    const rows = readFileSync(join(ws.outDir, 'results.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Row);
    expect(rows.map((r) => [r.id, r.state])).toEqual([
      ['hero', 'done'],
      ['lite', 'done'],
      ['doomed', 'failed'],
      ['naughty', 'blocked'],
      ['spin', 'done'],
      ['spin-local', 'done'],
      ['spin-doomed', 'skipped'],
    ]);

    const browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, locale: 'en-US' });
    const requested: string[] = [];
    const pageErrors: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(pathToFileURL(join(ws.outDir, 'index.html')).href);

    // The grid: one card per item, in manifest order, every output shown.
    expect(await page.$$eval('.card', (cards) => cards.map((c) => (c as HTMLElement).dataset.id))).toEqual(
      rows.map((r) => r.id),
    );
    const shown = await mediaShown(page);
    expect(shown.images.sort()).toEqual(['hero-1.png', 'lite-1.png']);
    expect(shown.videos.map((v) => v.src).sort()).toEqual(['spin-1.mp4', 'spin-local-1.mp4']);
    expect(shown.videos.every((v) => v.width > 0)).toBe(true);
    // Posters: the image each video started from, another item's output or the local input inlined.
    expect(Object.fromEntries(shown.videos.map((v) => [v.src, v.poster.slice(0, 22)]))).toEqual({
      'spin-1.mp4': 'hero-1.png',
      'spin-local-1.mp4': 'data:image/png;base64,',
    });
    // A prompt is text, never markup.
    expect(await page.textContent('[data-id="hero"] .prompt')).toBe('A <b>mug</b> & "quotes" on a table');
    expect(await page.$$('[data-id="hero"] .prompt b')).toHaveLength(0);

    // The summary bar agrees with the export.
    const summary = (await page.textContent('.summary'))!;
    const charged = rows.reduce((s, r) => s + r.creditsCharged, 0);
    const refunded = rows.reduce((s, r) => s + r.creditsRefunded, 0);
    expect(summary).toContain('7 items');
    expect(summary).toContain(`${charged - refunded} credits net (${charged} charged, ${refunded} refunded)`);
    for (const code of ['GENERATION_FAILED', 'CONTENT_VIOLATION', 'DEPENDENCY_FAILED'])
      expect(summary).toContain(`${code} 1`);
    expect(summary).toMatch(/run time \d/);

    // Failed items say why.
    const doomed = rows.find((r) => r.id === 'doomed')!;
    expect(await page.textContent('[data-id="doomed"] .error')).toBe(`${doomed.errorCode} ${doomed.errorMessage}`);
    expect(await page.textContent('[data-id="naughty"] .error')).toContain('CONTENT_VIOLATION');
    expect(await page.textContent('[data-id="spin-doomed"] .error')).toContain('DEPENDENCY_FAILED');

    // Filters: a click on "done" hides the done items; the model filter narrows further.
    await page.click('label.chip:has(input[value="done"])');
    expect(await visibleIds(page)).toEqual(['doomed', 'naughty', 'spin-doomed']);
    expect(await page.textContent('#shown')).toBe('3 of 7 shown');
    await page.selectOption('#model', 'motion-2');
    expect(await visibleIds(page)).toEqual(['spin-doomed']);
    await page.click('label.chip:has(input[value="done"])');
    expect(await visibleIds(page)).toEqual(['spin', 'spin-local', 'spin-doomed']);
    await page.click('label.chip:has(input[value="skipped"])');
    await page.click('label.chip:has(input[value="done"])');
    expect(await visibleIds(page)).toEqual([]);
    expect(await page.isVisible('#none')).toBe(true);
    await page.selectOption('#model', '');
    for (const state of ['done', 'skipped']) await page.click(`label.chip:has(input[value="${state}"])`);
    expect(await visibleIds(page)).toEqual(rows.map((r) => r.id));

    // The run's plots, as genbatch review draws them: submissions, credits, jobs in flight.
    expect(await page.$$eval('#plots .plot', (plots) => plots.map((p) => (p as HTMLElement).dataset.title))).toEqual([
      'submissions per 0.1 s',
      'credits charged (net)',
      'jobs in flight',
    ]);
    expect(await page.$$('#plots canvas')).toHaveLength(3);

    // Nothing left the file system, and the page's script ran clean.
    expect(requested.filter((url) => !url.startsWith('file:') && !url.startsWith('data:'))).toEqual([]);
    expect(pageErrors).toEqual([]);
    mkdirSync(resolve('test-artifacts'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    console.log(`gallery screenshot: ${SCREENSHOT}`);
  });

  it('after the demo, the output dir holds index.html, results.jsonl and results.csv, and the gallery shows every output', async () => {
    const dir = resolve('test-artifacts/demo');
    rmSync(dir, { recursive: true, force: true });
    // A rehearsal writes beside the dir it is given, never into it.
    const out = join(dir, 'out.rehearsal');
    const demo = await runCli([
      'run',
      'manifests/demo.yaml',
      '--simulate',
      '--time-scale',
      '600',
      '--state',
      join(dir, 'demo.sqlite'),
      '--out',
      join(dir, 'out'),
    ]);
    expect(demo.code).toBe(0);
    const rows = readFileSync(join(out, 'results.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Row);
    expect(readFileSync(join(out, 'results.csv'), 'utf8').trim().split('\n')).toHaveLength(rows.length + 1);
    const browser = await launchChromium();
    const page = await browser.newPage();
    await page.goto(pathToFileURL(join(out, 'index.html')).href);
    const shown = await mediaShown(page);
    expect(shown.images.sort()).toEqual(rows.flatMap((r) => r.files.map((f) => encodeURI(f.path))).sort());
    expect(shown.images.length).toBeGreaterThan(0);
  });

  it.each([
    ['a POSIX locale', 'en-US@posix'],
    ['no language', ''],
  ])('draws the plots in a browser with %s, in English', async (_, language) => {
    const t = [0, 60_000, 120_000];
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-gallery-'));
    writeFileSync(
      join(dir, 'index.html'),
      await renderGallery({
        title: 'plots',
        generatedAt: Date.now(),
        rows: [],
        posters: new Map(),
        credits: { charged: 2400, refunded: 0, net: 2400 },
        failures: {},
        run: { seconds: 120, sessions: 1 },
        plots: {
          bucketMs: 60_000,
          windowMs: 60_000,
          t,
          submissions: [10, 10, 5],
          submitLimit: 10,
          credits: [800, 1600, 2400],
          capAllowed: [20_000, 20_000, 20_000],
          budget: null,
          inFlight: [10, 10, 5],
          inFlightLimit: 10,
        },
      }),
    );
    const browser = await launchChromium();
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'warning' || m.type() === 'error') problems.push(m.text());
    });
    // What Chromium reports under LANG=C on some machines, forced here whatever this machine's locale.
    await page.addInitScript(
      (tag) => Object.defineProperty(navigator, 'language', { get: () => tag, configurable: true }),
      language,
    );
    await page.goto(pathToFileURL(join(dir, 'index.html')).href);
    expect(await page.evaluate(() => navigator.language)).toBe('en');
    expect(await page.$$('#plots canvas')).toHaveLength(3);
    expect(await page.$$('.plots-empty')).toHaveLength(0);
    expect(problems).toEqual([]);
  });

  it('a big catalog draws a page of cards at a time, and its filters count every item, drawn or not', async () => {
    const rows: ResultRow[] = Array.from({ length: 450 }, (_, i) => ({
      id: `sku-${i}`,
      state: i % 10 === 9 ? 'failed' : 'done',
      type: 'image',
      model: i % 3 ? 'studio-xl' : 'studio-lite',
      prompt: `product ${i}`,
      aspectRatio: null,
      resolution: null,
      duration: null,
      files: [],
      jobIds: [],
      creditsCharged: 8,
      creditsRefunded: 0,
      errorCode: i % 10 === 9 ? 'GENERATION_FAILED' : null,
      errorMessage: null,
      values: {},
    }));
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-gallery-'));
    writeFileSync(
      join(dir, 'index.html'),
      await renderGallery({
        title: 'big',
        generatedAt: Date.now(),
        rows,
        posters: new Map(),
        credits: { charged: 3600, refunded: 0, net: 3600 },
        failures: { GENERATION_FAILED: 45 },
        run: { seconds: 60, sessions: 1 },
      }),
    );
    const browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(pathToFileURL(join(dir, 'index.html')).href);
    const drawn = () => page.$$eval('.card', (cards) => cards.length);
    expect(await drawn()).toBe(200);
    expect(await page.textContent('#shown')).toBe('450 of 450 shown');
    // A click on "show more" (without scrolling to it) draws the next page.
    await page.$eval('#more', (button) => (button as HTMLButtonElement).click());
    expect(await drawn()).toBe(400);
    // Scrolling to the end draws the rest.
    await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
    await page.waitForFunction(() => document.querySelectorAll('.card').length === 450);
    expect(await page.isVisible('#more')).toBe(false);
    await page.click('label.chip:has(input[value="done"])');
    expect(await page.textContent('#shown')).toBe('45 of 450 shown');
    expect(await page.$$eval('.card', (cards) => cards.map((c) => (c as HTMLElement).dataset.id))).toEqual(
      rows.filter((r) => r.state === 'failed').map((r) => r.id),
    );
    await page.selectOption('#model', 'studio-lite');
    expect(await page.textContent('#shown')).toBe(
      `${rows.filter((r) => r.state === 'failed' && r.model === 'studio-lite').length} of 450 shown`,
    );
  });

  it('reviews a catalog: items not yet run hidden at first, search by id and prompt, and a density for many small thumbnails', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-gallery-'));
    const colours = ['red', 'blue', 'green'];
    const rows: ResultRow[] = Array.from({ length: 10 }, (_, i) => ({
      id: `mug-${i}`,
      state: i < 6 ? 'done' : 'pending',
      type: 'image',
      model: 'studio-lite',
      prompt: `A ${colours[i % 3]} Mug, studio photo`,
      aspectRatio: '4:5',
      resolution: '1K',
      duration: null,
      files: i < 6 ? [{ path: `mug-${i}.png`, bytes: 1, sha256: 'x' }] : [],
      jobIds: i < 6 ? [`job-${i}`] : [],
      creditsCharged: i < 6 ? 2 : 0,
      creditsRefunded: 0,
      errorCode: null,
      errorMessage: null,
      values: {},
    }));
    for (const r of rows) for (const f of r.files) writeFileSync(join(dir, f.path), makePng(r.id));
    writeFileSync(
      join(dir, 'index.html'),
      await renderGallery({
        title: 'review',
        generatedAt: Date.now(),
        rows,
        posters: new Map(),
        credits: { charged: 12, refunded: 0, net: 12 },
        failures: {},
        run: { seconds: 5, sessions: 1 },
      }),
    );
    const browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(pathToFileURL(join(dir, 'index.html')).href);
    const ids = () => page.$$eval('.card', (cards) => cards.map((c) => (c as HTMLElement).dataset.id));
    // The 4 pending placeholders start hidden; their chip brings them back.
    expect(await page.textContent('#shown')).toBe('6 of 10 shown');
    expect(await page.isChecked('input[value="pending"]')).toBe(false);
    // Words in any order and case, in the id or the prompt.
    await page.fill('#search', 'mug RED');
    expect(await ids()).toEqual(['mug-0', 'mug-3']);
    await page.fill('#search', 'mug-5');
    expect(await ids()).toEqual(['mug-5']);
    await page.press('#search', 'Enter');
    expect(await ids()).toEqual(['mug-5']);
    await page.fill('#search', '');
    await page.click('label.chip:has(input[value="pending"])');
    expect(await page.textContent('#shown')).toBe('10 of 10 shown');
    const width = () => page.$eval('.card', (c) => c.getBoundingClientRect().width);
    const comfortable = await width();
    expect(await page.isVisible('.card .prompt')).toBe(true);
    await page.selectOption('#density', 'thumbnails');
    expect(await width()).toBeLessThan(comfortable / 2);
    expect(await page.isVisible('.card .meta')).toBe(false);
    await page.selectOption('#density', 'compact');
    expect(await page.isVisible('.card .prompt')).toBe(false);
    expect(await page.isVisible('.card .id')).toBe(true);
    await page.selectOption('#density', 'thumbnails');
    mkdirSync('test-artifacts', { recursive: true });
    await page.screenshot({ path: 'test-artifacts/gallery-thumbnails.png' });

    // The lightbox: a thumbnail opens the full-size output with its facts; the arrow keys walk the items shown, Esc closes.
    await page.selectOption('#density', 'comfortable');
    await page.click('.card[data-id="mug-1"] .media a');
    expect(await page.isVisible('#lightbox')).toBe(true);
    const fact = (name: string) => page.textContent(`#lb-meta .lb-${name}`);
    expect([
      await fact('id'),
      await fact('model'),
      await fact('aspect-ratio'),
      await fact('resolution'),
      await fact('credits'),
      await fact('job'),
      await fact('file'),
    ]).toEqual(['mug-1', 'studio-lite', '4:5', '1K', '2', 'job-1', 'mug-1.png']);
    expect(
      await page.$eval(
        '#lb-media img',
        (img) => (img as HTMLImageElement).complete && (img as HTMLImageElement).naturalWidth,
      ),
    ).toBeGreaterThan(0);
    expect(await page.textContent('#lb-pos')).toBe('2 of 10');
    await page.screenshot({ path: 'test-artifacts/gallery-lightbox.png' });
    await page.keyboard.press('ArrowRight');
    expect(await fact('id')).toBe('mug-2');
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('ArrowLeft');
    expect(await fact('id')).toBe('mug-0');
    await page.keyboard.press('Escape');
    expect(await page.isVisible('#lightbox')).toBe(false);
    // A pending item's id opens it too, with what it lacks said plainly.
    await page.click('.card[data-id="mug-7"] h2 .id');
    expect(await page.textContent('#lb-media')).toBe('pending');
    await page.keyboard.press('Escape');
  });

  it('groups the variants of a row together, and the same prompt across models side by side', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-gallery-'));
    // Two skus in two scenes, and each prompt made by two models: the manifest's order interleaves them.
    const rows: ResultRow[] = [];
    for (const model of ['studio-xl', 'studio-lite']) {
      for (const sku of ['mug-1', 'mug-2']) {
        for (const scene of ['studio', 'kitchen']) {
          rows.push({
            id: `${sku}-${scene}-${model}`,
            state: 'done',
            type: 'image',
            model,
            prompt: `${sku} in a ${scene}`,
            aspectRatio: null,
            resolution: null,
            duration: null,
            files: [],
            jobIds: [],
            creditsCharged: 2,
            creditsRefunded: 0,
            errorCode: null,
            errorMessage: null,
            values: { sku, scene },
          });
        }
      }
    }
    writeFileSync(
      join(dir, 'index.html'),
      await renderGallery({
        title: 'groups',
        generatedAt: Date.now(),
        rows,
        posters: new Map(),
        credits: { charged: 16, refunded: 0, net: 16 },
        failures: {},
        run: { seconds: 5, sessions: 1 },
      }),
    );
    const browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(pathToFileURL(join(dir, 'index.html')).href);
    const layout = () =>
      page.$$eval('#grid > *', (nodes) =>
        nodes.map((n) => (n.classList.contains('group') ? `# ${n.textContent}` : (n as HTMLElement).dataset.id)),
      );
    expect(await page.$$eval('#group option', (o) => o.map((x) => (x as HTMLOptionElement).value))).toEqual([
      '',
      'prompt',
      'model',
      'sku',
      'scene',
    ]);
    await page.selectOption('#group', 'sku');
    expect(await layout()).toEqual([
      '# sku: mug-1 · 4',
      'mug-1-studio-studio-xl',
      'mug-1-kitchen-studio-xl',
      'mug-1-studio-studio-lite',
      'mug-1-kitchen-studio-lite',
      '# sku: mug-2 · 4',
      'mug-2-studio-studio-xl',
      'mug-2-kitchen-studio-xl',
      'mug-2-studio-studio-lite',
      'mug-2-kitchen-studio-lite',
    ]);
    await page.selectOption('#group', 'prompt');
    const byPrompt = await layout();
    expect(byPrompt.slice(0, 3)).toEqual([
      '# prompt: mug-1 in a studio · 2',
      'mug-1-studio-studio-xl',
      'mug-1-studio-studio-lite',
    ]);
    expect(byPrompt.filter((x) => x!.startsWith('#'))).toHaveLength(4);
    // Side by side: the two models' cards of one prompt share a row.
    const tops = await page.$$eval('.card[data-id^="mug-1-studio-"]', (cards) =>
      cards.map((c) => c.getBoundingClientRect().top),
    );
    expect(new Set(tops).size).toBe(1);
    mkdirSync('test-artifacts', { recursive: true });
    await page.screenshot({ path: 'test-artifacts/gallery-groups.png' });
    // Filters still apply inside groups.
    await page.fill('#search', 'kitchen');
    expect((await layout()).filter((x) => x!.startsWith('#'))).toEqual([
      '# prompt: mug-1 in a kitchen · 2',
      '# prompt: mug-2 in a kitchen · 2',
    ]);
    await page.selectOption('#group', '');
    expect((await layout()).some((x) => x!.startsWith('#'))).toBe(false);
  });
});
