import { existsSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import sharp from 'sharp';
import { makePng } from '../../src/simulator/media.js';
import { MemorySink } from '../helpers/memory-sink.js';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { raw, startTestReview } from '../helpers/review.js';
import { imageManifest, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';
import { FolderSink } from '../../src/sink/index.js';
import { keptName } from '../../src/copies/thumbs/kept.js';
import { FIRST_SCREEN_THUMBS } from '../../src/copies/thumbs/grid.js';
import { NEWEST_SHOWN } from '../../src/review/live.js';
import { Store } from '../../src/store/index.js';

/**
 * A run of `items` images (`extra`: more of the manifest's top level), or of a manifest of its own, and a
 * review server on its state (started once `before` has changed what the run left).
 */
async function reviewedRun(
  items = 3,
  extra = '',
  manifest = imageManifest(items, undefined, extra),
  before?: (ws: ReturnType<typeof workspace>) => void,
) {
  const t = await startTestSim({ timeScale: 600 });
  const ws = workspace(t.sim, manifest);
  expect((await ws.run()).code).toBe(0);
  before?.(ws);
  const server = await startTestReview({
    statePath: ws.statePath,
    outputs: new FolderSink(ws.outDir),
    title: 'm',
    budget: null,
  });
  return { t, ws, server };
}

describe('the review server, as a local server must be', () => {
  it('answers only with its token, only at its own address, and sends no CORS header', async () => {
    const { server } = await reviewedRun();
    const { base, token } = server;
    expect(new URL(server.url).hostname).toBe('127.0.0.1');
    expect((await raw(base, 'GET', '/')).status).toBe(403);
    expect((await raw(base, 'GET', '/?token=wrong')).status).toBe(403);
    expect((await raw(base, 'GET', `/api/items?token=${token.slice(0, -1)}`)).status).toBe(403);
    const page = await raw(base, 'GET', `/?token=${token}`);
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toMatch(/default-src 'none'/);
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    // DNS rebinding: a page at evil.example resolved to 127.0.0.1 sends its own name as Host.
    const rebound = await raw(base, 'GET', `/api/items?token=${token}`, { host: `evil.example:${server.port}` });
    expect(rebound.status).toBe(403);
    expect((await raw(base, 'GET', `/?token=${token}`, { host: 'localhost:1' })).status).toBe(403);
    expect((await raw(base, 'GET', `/api/items?token=${token}`, { host: `localhost:${server.port}` })).status).toBe(
      200,
    );
    const preflight = await raw(base, 'OPTIONS', `/api/review?token=${token}`, {
      origin: 'http://evil.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'x-genbatch-token',
    });
    expect(preflight.status).toBe(405);
    const fromElsewhere = await raw(base, 'GET', `/api/items?token=${token}`, { origin: 'http://evil.example' });
    for (const answer of [page, preflight, fromElsewhere])
      expect(Object.keys(answer.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
  });

  it("serves the grid's first slice inside the page, and no prompt closes its script element", async () => {
    const hostile = 'a mug </script><script>document.title="owned"</script> \u2028 end';
    const { server } = await reviewedRun(
      2,
      '',
      `version: 1\ndefaults: { model: studio-lite }\nitems:\n  - { id: mug, prompt: ${JSON.stringify(hostile)} }\n  - { id: bowl, prompt: "a bowl" }\n`,
    );
    const page = await raw(server.base, 'GET', `/?token=${server.token}`);
    const block = /<script type="application\/json" id="first-slice">([\s\S]*?)<\/script>/.exec(page.body)?.[1];
    expect(block).toBeDefined();
    const first = JSON.parse(block!) as { total: number; cards: { id: string; prompt: string }[] };
    expect(first.total).toBe(2);
    expect(first.cards.map((c) => [c.id, c.prompt])).toEqual([
      ['mug', hostile],
      ['bowl', 'a bowl'],
    ]);
    // The page's own scripts follow the block untouched: the prompt opened no element of its own.
    expect(page.body.match(/<script/g)).toHaveLength(3);
  });

  it('takes a write only with the token in a header, from its own page', async () => {
    const { server, ws } = await reviewedRun(1);
    const { base, token } = server;
    const decision = JSON.stringify({ itemId: 'item-0', version: 1, decision: 'rejected', note: 'blurry' });
    const json = { 'content-type': 'application/json' };
    expect((await raw(base, 'POST', `/api/review?token=${token}`, json, decision)).status).toBe(403);
    const foreign = await raw(
      base,
      'POST',
      '/api/review',
      { ...json, 'x-genbatch-token': token, origin: 'http://evil.example' },
      decision,
    );
    expect(foreign.status).toBe(403);
    const ok = await raw(base, 'POST', '/api/review', { ...json, 'x-genbatch-token': token }, decision);
    expect(ok.status, ok.body).toBe(200);
    expect(JSON.parse(ok.body).cards[0]).toMatchObject({ id: 'item-0', decision: 'rejected', note: 'blurry' });
    // A version the item does not have is refused, and nothing is written.
    const none = await raw(
      base,
      'POST',
      '/api/review',
      { ...json, 'x-genbatch-token': token },
      JSON.stringify({ itemId: 'item-0', version: 2, decision: 'approved' }),
    );
    expect(none.status).toBe(409);
    const bad = await raw(base, 'POST', '/api/review', { ...json, 'x-genbatch-token': token }, '{"itemId": 5}');
    expect(bad.status).toBe(400);
    const items = JSON.parse((await raw(base, 'GET', `/api/items?token=${token}&review=rejected`)).body);
    expect(items.cards.map((c: { id: string }) => c.id)).toEqual(['item-0']);
    expect(ws.statePath).toBeTruthy();
  });

  it('refuses a decision on a version that is no longer the current one (409, naming it), and records nothing', async () => {
    const { server, ws } = await reviewedRun(1);
    const { base, token } = server;
    const post = (body: object) =>
      raw(
        base,
        'POST',
        '/api/review',
        { 'content-type': 'application/json', 'x-genbatch-token': token },
        JSON.stringify(body),
      );
    expect((await post({ itemId: 'item-0', version: 1, decision: 'rejected' })).status).toBe(200);
    expect((await ws.run(['--redo-rejected'])).code).toBe(0);
    const late = await post({ itemId: 'item-0', version: 1, decision: 'approved' });
    expect(late.status).toBe(409);
    expect(JSON.parse(late.body).refused).toEqual([{ itemId: 'item-0', version: 1, reason: 'superseded', current: 2 }]);
    const store = Store.openReadOnly(ws.statePath);
    try {
      expect(store.reviews.ofItem('item-0').map((r) => [r.version, r.decision])).toEqual([[1, 'rejected']]);
      expect(store.decisions.list().map((d) => [d.version, d.decision, d.by])).toEqual([[1, 'rejected', 'unknown']]);
    } finally {
      store.close();
    }
    expect((await post({ itemId: 'item-0', version: 2, decision: 'approved' })).status).toBe(200);
  });

  it('searches words in ids and prompts, ignoring case; % and _ are plain characters', async () => {
    const { server } = await reviewedRun(12);
    const { base, token } = server;
    const ids = async (q: string) =>
      JSON.parse((await raw(base, 'GET', `/api/items?token=${token}&q=${encodeURIComponent(q)}`)).body).cards.map(
        (c: { id: string }) => c.id,
      );
    expect(await ids('PRODUCT 1')).toEqual(['item-1', 'item-10', 'item-11']);
    expect(await ids('item-1 product 11')).toEqual(['item-11']);
    expect(await ids('%')).toEqual([]);
    expect(await ids('item_1')).toEqual([]);
  });

  it('serves the outputs and nothing else: traversal, other files and links out of the dir are 404', async () => {
    const { server, ws } = await reviewedRun(1);
    const { base, token } = server;
    const output = await raw(base, 'GET', `/files/item-0-1.png?token=${token}`);
    expect(output.status).toBe(200);
    expect(output.headers['content-type']).toBe('image/png');
    // Ranges, as a video player asks for them to scrub.
    const size = statSync(join(ws.outDir, 'item-0-1.png')).size;
    const part = await raw(base, 'GET', `/files/item-0-1.png?token=${token}`, { range: 'bytes=1-3' });
    expect([part.status, part.headers['content-range'], part.body]).toEqual([206, `bytes 1-3/${size}`, 'PNG']);
    const tail = await raw(base, 'GET', `/files/item-0-1.png?token=${token}`, { range: 'bytes=-4' });
    expect([tail.status, tail.headers['content-length']]).toEqual([206, '4']);
    const beyond = await raw(base, 'GET', `/files/item-0-1.png?token=${token}`, { range: `bytes=${size}-` });
    expect(beyond.status).toBe(416);
    writeFileSync(join(ws.dir, 'secret.txt'), 'not for the page');
    for (const path of [
      '/files/../secret.txt',
      '/files/..%2F..%2Fsecret.txt',
      '/files/%2e%2e/%2e%2e/secret.txt',
      '/files/..%5c..%5csecret.txt',
      `/files/${encodeURIComponent(join(ws.dir, 'secret.txt'))}`,
      '/files/results.jsonl',
      '/files/%zz',
      '/files/',
    ]) {
      const answer = await raw(base, 'GET', `${path}?token=${token}`);
      expect(answer.status, path).toBe(404);
      expect(answer.body).not.toContain('not for the page');
    }
    // An output replaced on disk by a link to a file outside the dir is not followed out.
    rmSync(join(ws.outDir, 'item-0-1.png'));
    symlinkSync(join(ws.dir, 'secret.txt'), join(ws.outDir, 'item-0-1.png'));
    const linked = await raw(base, 'GET', `/files/item-0-1.png?token=${token}`);
    expect(linked.status).toBe(404);
    expect(linked.body).not.toContain('not for the page');
  });

  it('never puts the API key in a page or an answer', async () => {
    const { server, t } = await reviewedRun(2);
    const { base, token } = server;
    for (const path of ['/', '/app.js', '/api/summary', '/api/items', '/api/series', '/api/versions?id=item-0']) {
      const answer = await raw(base, 'GET', `${path}${path.includes('?') ? '&' : '?'}token=${token}`);
      expect(answer.status, path).toBe(200);
      expect(answer.body).not.toContain(t.sim.apiKey);
      expect(JSON.stringify(answer.headers)).not.toContain(t.sim.apiKey);
    }
  });

  it('shows a card at its size: a thumbnail made once and kept beside the state, or the web copy where one was made', async () => {
    // An output as the service makes them, 2048 pixels wide, and bytes that are no image.
    const { server, ws } = await reviewedRun(2, '', undefined, (ws) => {
      writeFileSync(join(ws.outDir, 'item-0-1.png'), makePng('big', 2048, 2560));
      writeFileSync(join(ws.outDir, 'item-1-1.png'), 'not an image');
    });
    const { base, token } = server;
    const ask = (path: string) => fetch(`${base}${path}?token=${token}`);
    const first = await ask('/thumbs/item-0-1.png');
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('image/webp');
    const thumb = Buffer.from(await first.arrayBuffer());
    const meta = await sharp(thumb).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['webp', 320, 400]);
    // Kept beside the state: the next look reads it, even with the original gone.
    const kept = join(ws.statePath.replace(/\.sqlite$/, '.thumbs'));
    expect(readdirSync(kept).filter((f) => f.endsWith('.webp'))).toHaveLength(1);
    rmSync(join(ws.outDir, 'item-0-1.png'));
    const again = await ask('/thumbs/item-0-1.png');
    expect(Buffer.from(await again.arrayBuffer()).equals(thumb)).toBe(true);
    // What the maker cannot read (bytes that are no image) is shown as it is.
    const unreadable = await ask('/thumbs/item-1-1.png');
    expect([unreadable.status, unreadable.headers.get('content-type'), await unreadable.text()]).toEqual([
      200,
      'image/png',
      'not an image',
    ]);
    // Only recorded outputs: nothing else is read through it.
    for (const path of ['/thumbs/results.jsonl', '/thumbs/%2e%2e/m.yaml', '/thumbs/nope.png'])
      expect((await raw(base, 'GET', `${path}?token=${token}`)).status, path).toBe(404);
    expect((await raw(base, 'GET', '/thumbs/item-1-1.png')).status).toBe(403);
  });

  it("makes the first screen's thumbnails before the page asks, and serves them inside the page", async () => {
    const { server, ws } = await reviewedRun(3);
    const { base, token } = server;
    const kept = ws.statePath.replace(/\.sqlite$/, '.thumbs');
    const made = () => (existsSync(kept) ? readdirSync(kept).filter((f) => f.endsWith('.webp')).length : 0);
    // Nothing asked for a thumbnail: the server's start made them.
    await expect.poll(made, { timeout: 20_000, interval: 20 }).toBe(3);
    const page = await raw(base, 'GET', `/?token=${token}`);
    const block = /<script type="application\/json" id="first-slice">([\s\S]*?)<\/script>/.exec(page.body)?.[1];
    const cards = (JSON.parse(block!) as { cards: { file: string; inlineThumb?: string }[] }).cards;
    expect(cards).toHaveLength(3);
    for (const card of cards) {
      const [head, data] = (card.inlineThumb ?? '').split(',');
      expect(head).toBe('data:image/webp;base64');
      // The same bytes as the thumbnail asked for on its own.
      const asked = await fetch(`${base}/thumbs/${card.file}?token=${token}`);
      expect(Buffer.from(data!, 'base64').equals(Buffer.from(await asked.arrayBuffer()))).toBe(true);
    }
  });

  it("makes every thumbnail of the first screen before the newest strip's", async () => {
    // On a first open every thumbnail waits for the maker, one at a time: the first screen's are the ones a page
    // shows first, and a strip's made before them (the slowest, the maker's first) held them all back.
    const { ws } = await reviewedRun(90);
    const kept = ws.statePath.replace(/\.sqlite$/, '.thumbs');
    const at = (file: string) => statSync(join(kept, keptName(file))).mtimeMs;
    const made = (file: string) => existsSync(join(kept, keptName(file)));
    const firstScreen = Array.from({ length: FIRST_SCREEN_THUMBS }, (_, i) => `item-${i}-1.png`);
    const store = Store.openReadOnly(ws.statePath);
    const strip = store.reviewQueries
      .downloadedSince(0, NEWEST_SHOWN)
      .map((o) => o.path)
      .filter((f) => !firstScreen.includes(f));
    store.close();
    expect(strip.length).toBeGreaterThanOrEqual(10);
    await expect.poll(() => [...firstScreen, ...strip].every(made), { timeout: 30_000, interval: 20 }).toBe(true);
    expect(Math.min(...strip.map(at))).toBeGreaterThanOrEqual(Math.max(...firstScreen.map(at)));
  });

  it("makes the thumbnails of a slice's screen as the slice is answered", async () => {
    // More items than the first screen and the newest strip, whose thumbnails the start makes: the 45th and the
    // 51st to the 56th are on neither (the strip is the 24 newest of 90, give or take the ten downloaded at once).
    const { server, ws } = await reviewedRun(90);
    const { base, token } = server;
    const kept = ws.statePath.replace(/\.sqlite$/, '.thumbs');
    const made = (id: number) => existsSync(join(kept, keptName(`item-${id}-1.png`)));
    const ask = (query: string) =>
      raw(base, 'GET', `/api/items?${query}&token=${token}`, { 'x-genbatch-token': token });
    // The first screen's, then the newest strip's (the last downloaded is among them).
    await expect.poll(() => [0, 39, 89].map(made), { timeout: 20_000, interval: 20 }).toEqual([true, true, true]);
    expect([44, 50, 51, 55].map(made)).toEqual([false, false, false, false]);
    const found = await ask('offset=0&limit=120&q=item-44');
    expect((JSON.parse(found.body) as { cards: { id: string }[] }).cards.map((c) => c.id)).toEqual(['item-44']);
    // Nothing asked for its thumbnail: the answer sent it on its way.
    await expect.poll(() => made(44), { timeout: 20_000, interval: 20 }).toBe(true);
    // A slice asked for a screen that begins inside it (a jump): the thumbnails from there on.
    await ask('offset=0&limit=120&screen=51');
    await expect.poll(() => [50, 51, 55].map(made), { timeout: 20_000, interval: 20 }).toEqual([false, true, true]);
  });

  it("makes a thumbnail of an output that is in no folder (a bucket's), from its bytes", async () => {
    // Only the bucket's server: a folder's, on the same state, would make and keep the folder's own thumbnail.
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(1));
    expect((await ws.run()).code).toBe(0);
    const outputs = new MemorySink();
    outputs.files.set('item-0-1.png', { bytes: makePng('big', 1600, 1200), mtimeMs: 1 });
    const server = await startTestReview({ statePath: ws.statePath, outputs, title: 'm', budget: null });
    const answer = await fetch(`${server.base}/thumbs/item-0-1.png?token=${server.token}`);
    expect(answer.headers.get('content-type')).toBe('image/webp');
    const meta = await sharp(Buffer.from(await answer.arrayBuffer())).metadata();
    expect([meta.width, meta.height]).toEqual([400, 300]);
  });

  it('gives a card the web copy of its output when the manifest makes them', async () => {
    const { server } = await reviewedRun(
      2,
      'derivatives: [{ format: webp, width: 96 }, { format: jpeg, width: 64 }]\n',
    );
    const page = (await (await fetch(`${server.base}/api/items?token=${server.token}`)).json()) as {
      cards: { id: string; file: string; copy: string | null }[];
    };
    // Both copies are under 400 pixels: the largest is shown.
    expect(page.cards.map((c) => [c.file, c.copy])).toEqual([
      ['item-0-1.png', 'item-0-1.96w.webp'],
      ['item-1-1.png', 'item-1-1.96w.webp'],
    ]);
  });
});
