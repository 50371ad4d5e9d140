import type { ServerResponse } from 'node:http';
import type { RunSeries } from '../report/series.js';
import type { NewOutput, Store } from '../store/index.js';
import type { ReviewSummary } from './summary.js';

/** Outputs sent in one event at most: a burst of downloads shows its newest. */
const NEWEST_MAX = 48;
/** The plots are redrawn at most this often: their query reads every attempt. */
const SERIES_EVERY_MS = 2_000;
/** Outputs the page opens with in its newest strip. */
const NEWEST_SHOWN = 24;
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
  private version = -1;
  private cursor: number;
  private seriesAt = 0;
  private seriesStale = true;

  constructor(
    private readonly source: LiveSource,
    everyMs: number,
  ) {
    this.cursor = source.store().reviewQueries.lastOutputCursor();
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
    res.write(event('series', this.source.series()));
    // The page opens on the newest outputs so far; later ones follow as they are downloaded.
    const newest = this.source.store().reviewQueries.newest(0, NEWEST_SHOWN);
    if (newest.length) res.write(event('newest', newest));
  }

  /** This server wrote (a decision): the next look sends the summary even though no other connection committed. */
  poke(): void {
    this.version = -1;
  }

  /** The state file was replaced (a rehearsal starts over): every page starts over too. */
  reset(): void {
    this.cursor = 0;
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
      const fresh: NewOutput[] = store.reviewQueries.newest(this.cursor, NEWEST_MAX);
      if (fresh.length) {
        this.cursor = fresh[0]!.cursor;
        this.broadcastRaw(event('outputs', fresh));
      }
    }
    if (this.seriesStale && now - this.seriesAt >= SERIES_EVERY_MS) {
      this.seriesStale = false;
      this.seriesAt = now;
      this.broadcastRaw(event('series', this.source.series()));
    }
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
