import type { ServerResponse } from 'node:http';
import type { RunSeries } from '../report/series.js';
import type { NewOutput, Store } from '../store/index.js';
import type { ReviewSummary } from './header.js';

/** Outputs sent in one event at most: a burst of downloads shows its newest. */
const NEWEST_MAX = 48;
/** The plots are redrawn at most this often: their query reads every attempt. */
const SERIES_EVERY_MS = 2_000;
/** How far back each look reaches past the newest download it sent: a commit's lag after its time. */
const SLACK_MS = 5_000;
/** Outputs the page opens with in its newest strip. */
export const NEWEST_SHOWN = 24;
/** A comment line now and then keeps idle connections open through anything that times them out. */
const KEEPALIVE_MS = 15_000;

export interface LiveSource {
  store(): Store;
  summary(): ReviewSummary;
  series(): RunSeries;
}

/**
 * The live view's server-sent events: every `everyMs` it asks SQLite whether
 * another connection committed (PRAGMA data_version: no query of the items
 * when nothing moved), and if so sends the new summary and the outputs
 * downloaded since the last look; the plots at most every two seconds.
 */
export class LiveFeed {
  private readonly clients = new Set<ServerResponse>();
  private readonly timer: NodeJS.Timeout;
  private readonly keepalive: NodeJS.Timeout;
  /** The state's data_version at the last look: a page is sent what changed after it opened, not what it was sent. */
  private version: number;
  /** The newest download time sent, and the outputs sent at or after it less the slack (sent once). */
  private since = Date.now();
  private readonly sent = new Map<number, number>();
  private seriesAt = 0;
  private seriesStale = false;
  private seriesCache: { version: number; text: string } | undefined;

  constructor(
    private readonly source: LiveSource,
    everyMs: number,
  ) {
    // What was downloaded just before the feed started is the page's opening strip, not news.
    for (const o of source.store().reviewQueries.downloadedSince(this.since - SLACK_MS, 10_000))
      this.sent.set(o.rowid, o.downloadedAt);
    this.version = source.store().reviewQueries.dataVersion();
    this.timer = setInterval(() => this.tick(), everyMs);
    this.keepalive = setInterval(() => this.broadcastRaw(': keepalive\n\n'), KEEPALIVE_MS);
  }

  attach(res: ServerResponse): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
    });
    this.clients.add(res);
    res.on('close', () => this.clients.delete(res));
    res.write(event('summary', this.source.summary()));
    res.write(this.seriesEvent());
    // The page opens on the newest outputs so far; later ones follow as they are downloaded.
    const newest = this.source.store().reviewQueries.downloadedSince(0, NEWEST_SHOWN);
    if (newest.length) res.write(event('newest', newest));
  }

  /** This server wrote (a decision): the next look sends the summary even though no other connection committed. */
  poke(): void {
    this.version = -1;
  }

  /** The state file was replaced (a rehearsal starts over): every page starts over too. */
  reset(): void {
    this.sent.clear();
    this.seriesCache = undefined;
    this.version = -1;
    this.broadcastRaw(event('reset', {}));
  }

  private tick(): void {
    if (this.clients.size === 0) return;
    const store = this.source.store();
    const version = store.reviewQueries.dataVersion();
    const now = Date.now();
    if (version !== this.version) {
      this.version = version;
      this.seriesStale = true;
      this.broadcastRaw(event('summary', this.source.summary()));
      const fresh = this.freshOutputs(store);
      if (fresh.length) this.broadcastRaw(event('outputs', fresh));
    }
    if (this.seriesStale && now - this.seriesAt >= SERIES_EVERY_MS) {
      this.seriesStale = false;
      this.seriesAt = now;
      this.broadcastRaw(this.seriesEvent());
    }
  }

  /** The plots' data (a read of every attempt: 140 ms at 100,000), made again only when the state has changed. */
  private seriesEvent(): string {
    const version = this.source.store().reviewQueries.dataVersion();
    if (this.seriesCache?.version !== version)
      this.seriesCache = { version, text: event('series', this.source.series()) };
    return this.seriesCache.text;
  }

  /**
   * The outputs verified since the last look. A download's time is taken
   * just before its commit, so one committed a little after a later-timed
   * one is still found: each look reaches back SLACK_MS and leaves out what
   * it sent already.
   */
  private freshOutputs(store: Store): NewOutput[] {
    const found = store.reviewQueries.downloadedSince(this.since - SLACK_MS, NEWEST_MAX + this.sent.size);
    const fresh = found.filter((o) => !this.sent.has(o.rowid)).slice(0, NEWEST_MAX);
    for (const o of fresh) {
      this.sent.set(o.rowid, o.downloadedAt);
      this.since = Math.max(this.since, o.downloadedAt);
    }
    for (const [rowid, at] of this.sent) if (at < this.since - SLACK_MS) this.sent.delete(rowid);
    return fresh;
  }

  private broadcastRaw(text: string): void {
    for (const res of this.clients) res.write(text);
  }

  close(): void {
    clearInterval(this.timer);
    clearInterval(this.keepalive);
    for (const res of this.clients) res.end();
    this.clients.clear();
  }
}

const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
