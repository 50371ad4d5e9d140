import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SLICE } from '../browser/data.js';
import type { ReviewCard, ReviewFilter } from '../store/index.js';
import { runSeries } from '../report/series.js';
import { parseOwner, SnapshotKeeper, type OutputSink } from '../sink/index.js';
import { applyDecision, decisionBody, sliceOf } from './api.js';
import { pageAssets, type PageAssets } from './assets.js';
import { guardFor, refusal, type Guard } from '../serve/guard.js';
import { listen } from '../serve/listen.js';
import { serveOutput } from './files.js';
import { thumbsBeside } from '../copies/thumbs/kept.js';
import { FIRST_SCREEN_THUMBS, GridThumbnails } from '../copies/thumbs/grid.js';
import { serveThumbnail } from './thumbs.js';
import { LiveFeed, NEWEST_SHOWN } from './live.js';
import { StateHandle } from './state-handle.js';
import { reviewSummary } from './header.js';
import { ResultsAfterDecisions } from './results.js';

export interface ReviewServerOptions {
  statePath: string;
  /** Where the outputs are: the server's from now on, closed with it. */
  outputs: OutputSink;
  title: string;
  /** Who decides here, as the decision record keeps it ("unknown" unless said). */
  by?: string;
  /** The manifest's budget (budget.maxCredits), drawn against the credits. */
  budget: number | null;
  /** Loopback unless asked otherwise. */
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** How often the live view looks at the state (ms). */
  liveEveryMs?: number;
  /** With outputs in a bucket: how often decisions made here go there in the state's snapshot (ms; 30 s). */
  snapshotEveryMs?: number;
}

export interface ReviewServer {
  /** The URL to open, with its token. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** A decision's body is small: anything larger is refused before it is read whole. */
const MAX_BODY_BYTES = 1 << 20;

const SECURITY_HEADERS = {
  // The page runs only its own scripts and reaches only this server; no other page may frame it.
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-content-type-options': 'nosniff',
  // The token is in the page's URL: it never leaves in a Referer.
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/**
 * The review app's server: loopback, a random token on every request, the
 * Host header checked (DNS rebinding), no CORS, writes only with the token in
 * a header, and only recorded outputs inside the output dir served. It reads
 * the state beside any run and writes only review decisions, and the results
 * files they change. No API key is ever read here.
 */
export async function startReviewServer(options: ReviewServerOptions): Promise<ReviewServer> {
  const host = options.host ?? '127.0.0.1';
  const token = randomBytes(24).toString('base64url');
  const state = new StateHandle(options.statePath);
  const assets = await pageAssets();
  const source = {
    store: () => state.store,
    summary: () => reviewSummary(state.store, { ...options, statePath: options.statePath }, Date.now()),
    series: () => runSeries(state.store, options.budget),
  };
  const live = new LiveFeed(source, options.liveEveryMs ?? 500);
  const thumbs = new GridThumbnails(thumbsBeside(options.statePath), options.outputs);
  // The first screen's thumbnails are on their way before the page is opened (a first open made them one by one),
  // then the newest strip's, in one round: as two, the strip's first was begun before the newer round came, and on a
  // first open the maker's first (its slowest) thumbnail was not a card's.
  const { reviewQueries } = state.store;
  thumbs.ahead([
    ...thumbnailed(reviewQueries.page({}, 0, FIRST_SCREEN_THUMBS).cards),
    ...reviewQueries.downloadedSince(0, NEWEST_SHOWN).flatMap((o) => (o.type === 'image' ? [o.path] : [])),
  ]);
  const keeper = keeperOf(options, state);
  keeper?.start();
  const results = new ResultsAfterDecisions(() => state.store, options.outputs, options);
  state.onReplaced = () => live.reset();
  let guard: Guard | undefined;
  let closing: Promise<void> | undefined;
  // Once a page has shown its first screen (it then opens the live feed): nothing competes with that screen.
  let counting = false;
  const shown = () => {
    if (counting) return;
    counting = true;
    countAhead(state, () => closing !== undefined);
  };
  const { outputs } = options;
  const parts = { state, assets, live, source, outputs, thumbs, token, shown, results, by: options.by ?? 'unknown' };
  const server = createServer((req, res) => {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    const ctx = { ...parts, guard: guard! };
    handle(req, res, ctx).catch((error) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`error: ${(error as Error).message}`);
    });
  });
  await listen(server, host, options.port ?? 0);
  const port = (server.address() as AddressInfo).port;
  guard = guardFor(token, host, port);
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}/?token=${token}`,
    port,
    close() {
      // Closed once, however often asked (a command's end, and a test's).
      closing ??= (async () => {
        live.close();
        thumbs.close();
        await results.close();
        // The decisions made since the last snapshot go to the bucket before the state is let go.
        await keeper?.end();
        await options.outputs.close();
        state.close();
        server.closeAllConnections();
        await new Promise<void>((done) => server.close(() => done()));
      })();
      return closing;
    },
  };
}

interface Context {
  guard: Guard;
  state: StateHandle;
  assets: PageAssets;
  live: LiveFeed;
  source: { summary(): unknown; series(): unknown };
  outputs: OutputSink;
  thumbs: GridThumbnails;
  /** The results files, written again once decisions are made. */
  results: ResultsAfterDecisions;
  token: string;
  /** Who decides here. */
  by: string;
  /** A page has shown its first screen. */
  shown: () => void;
}

async function handle(req: IncomingMessage, res: ServerResponse, ctx: Context): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://review.invalid');
  const write = req.method === 'POST';
  if (req.method !== 'GET' && req.method !== 'HEAD' && !write) {
    res.writeHead(405, { allow: 'GET, POST' }).end();
    return;
  }
  const refused = refusal(req, url, ctx.guard, write);
  if (refused) {
    res.writeHead(403, { 'content-type': 'text/plain; charset=utf-8' }).end(`forbidden: ${refused}`);
    return;
  }
  if (write) return handleWrite(req, res, url, ctx);
  const path = url.pathname;
  if (path.startsWith('/files/')) {
    const relative = safeDecode(path.slice('/files/'.length));
    const { outputFiles, webCopies } = ctx.state.store;
    // Recorded outputs and their recorded web copies: nothing else.
    const known = (p: string) => outputFiles.ownerOf(p) !== undefined || webCopies.isCopy(p);
    return serveOutput(res, ctx.outputs, relative ?? '', known, req.headers.range);
  }
  if (path.startsWith('/thumbs/')) {
    const relative = safeDecode(path.slice('/thumbs/'.length)) ?? '';
    return serveThumbnail(
      res,
      ctx.thumbs,
      ctx.outputs,
      relative,
      (p) => ctx.state.store.outputFiles.ownerOf(p) !== undefined,
    );
  }
  const asset = ctx.assets.byPath.get(path);
  if (asset) {
    const body = path === '/' ? await pageBody(asset.body, ctx) : asset.body;
    res.writeHead(200, { 'content-type': asset.type, 'cache-control': 'no-store' }).end(body);
    return;
  }
  if (path === '/api/events') {
    ctx.shown();
    return ctx.live.attach(res);
  }
  const data = readApi(path, url, ctx);
  if (data === undefined) {
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found');
    return;
  }
  json(res, 200, data);
}

/**
 * The page with its token, and the grid's first slice inside it: the first
 * cards are drawn when the page's script runs, not a round trip later (the
 * question cost 150 ms of a 450 ms first screen, asked only once the
 * scripts had run). The first screen's thumbnails already made come inside
 * too: twenty requests for them took 200 ms of a 360 ms first screen.
 */
async function pageBody(html: string, ctx: Context): Promise<string> {
  const first = ctx.state.store.reviewQueries.page({}, 0, SLICE);
  const files = thumbnailed(first.cards.slice(0, FIRST_SCREEN_THUMBS));
  const kept = new Map(await Promise.all(files.map(async (f) => [f, await ctx.thumbs.kept(f)] as const)));
  // Those not made yet (new outputs since the server started) are made now, for the page's own asking.
  ctx.thumbs.ahead(files.filter((f) => !kept.get(f)));
  const cards = first.cards.map((card) => {
    const thumb = card.file ? kept.get(card.file) : undefined;
    return thumb ? { ...card, inlineThumb: `data:image/webp;base64,${thumb.toString('base64')}` } : card;
  });
  // Inside a script element: no `<` may close it, whatever a prompt holds.
  const inline = JSON.stringify({ ...first, cards })
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
  return html.replaceAll('__TOKEN__', encodeURIComponent(ctx.token)).replace('"__FIRST_SLICE__"', () => inline);
}

/**
 * The filters the page offers, counted one a turn of the event loop once a page has shown its first screen: a
 * reviewer's first pick is answered from the cache and the totals kept, and a question asked meanwhile waits for
 * one count at most. Not from the server's start: a first open's page and scripts would wait behind counts read cold.
 */
function countAhead(state: StateHandle, stopped: () => boolean): void {
  let filters: ReviewFilter[];
  try {
    filters = state.store.reviewQueries.offeredFilters();
  } catch {
    return;
  }
  const next = () => {
    const filter = filters.shift();
    if (!filter || stopped()) return;
    try {
      state.store.reviewQueries.count(filter);
    } catch {
      // A state replaced meanwhile: its filters are counted as they are asked for.
      return;
    }
    setImmediate(next);
  };
  setImmediate(next);
}

/** The outputs of these cards that are shown as thumbnails: images with no web copy. */
function thumbnailed(cards: readonly ReviewCard[]): string[] {
  return cards.flatMap((c) => (c.type === 'image' && c.file && !c.copy ? [c.file] : []));
}

function readApi(path: string, url: URL, ctx: Context): unknown {
  const queries = ctx.state.store.reviewQueries;
  if (path === '/api/summary') return ctx.source.summary();
  if (path === '/api/series') return ctx.source.series();
  if (path === '/api/items') {
    const { filter, offset, limit, screen } = sliceOf(url);
    const page = queries.slice(filter, offset, limit);
    // The screen the slice is for (a filter's first, a jump's): its thumbnails are on their way before the page
    // asks for them, two at a time.
    ctx.thumbs.ahead(thumbnailed(page.cards.slice(screen, screen + FIRST_SCREEN_THUMBS)));
    return page;
  }
  // A search's first slice may come before its count: the page asks for the count then.
  if (path === '/api/count') return { total: queries.count(sliceOf(url).filter) };
  if (path === '/api/versions')
    return { itemId: url.searchParams.get('id'), versions: queries.versions(url.searchParams.get('id') ?? '') };
  return undefined;
}

async function handleWrite(req: IncomingMessage, res: ServerResponse, url: URL, ctx: Context): Promise<void> {
  if (url.pathname !== '/api/review') {
    res.writeHead(404).end();
    return;
  }
  const text = await readBody(req);
  const parsed = text === undefined ? undefined : decisionBody.safeParse(safeJson(text));
  if (!parsed?.success) {
    json(res, 400, { error: 'expected {itemId, version, decision, note?} or {items: [{itemId, version}], decision}' });
    return;
  }
  const result = applyDecision(ctx.state.store, parsed.data, Date.now(), ctx.by);
  ctx.live.poke();
  ctx.results.decided();
  json(res, result.refused.length ? 409 : 200, {
    ...result,
    review: ctx.state.store.reviews.counts(),
  });
}

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        resolve(undefined);
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(undefined));
  });
}

function json(res: ServerResponse, status: number, data: unknown): void {
  res
    .writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
    .end(JSON.stringify(data));
}

function safeDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Reviewers often work after the run has ended: with outputs in a bucket,
 * their decisions go there in the state's snapshot every 30 s and when the
 * app stops. Only while the place's marker names this state: a reviewer left
 * on an old machine never overwrites what the run's new machine keeps there.
 */
function keeperOf(options: ReviewServerOptions, state: StateHandle): SnapshotKeeper | undefined {
  const { snapshots } = options.outputs;
  if (!snapshots || state.store.meta('rehearsal') === '1') return undefined;
  return new SnapshotKeeper(snapshots, () => state.store, {
    everyMs: options.snapshotEveryMs,
    allowed: async () => {
      const marker = await options.outputs.readMarker();
      return marker !== undefined && parseOwner(marker)?.state === options.statePath;
    },
  });
}
