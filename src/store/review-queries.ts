import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';
import type { ReviewDecision } from './reviews.js';
import { ITEM_STATES, type ItemState } from './states.js';

/** What the review app filters its grid by; every field optional. */
export interface ReviewFilter {
  /** 'unreviewed': done with no decision on its current version. */
  review?: ReviewDecision | 'unreviewed' | undefined;
  state?: ItemState | undefined;
  model?: string | undefined;
  /** Words looked for in the item's id and spec (prompt, values, tags), case-insensitively. */
  search?: string | undefined;
}

/** One card of the review grid: the item and its current version's first output. */
export interface ReviewCard {
  id: string;
  state: ItemState;
  type: 'image' | 'video';
  model: string;
  prompt: string;
  /** The current version, when one is on disk. */
  version: number | null;
  /** Its first output, relative to the output dir. */
  file: string | null;
  decision: ReviewDecision | null;
  note: string | null;
}

/** An output downloaded since the app last asked: the live view's newest cards. */
export interface NewOutput {
  /** The outputs row's rowid: which ones the app has sent already. */
  rowid: number;
  itemId: string;
  path: string;
  type: 'image' | 'video';
  version: number;
  downloadedAt: number;
}

/** One version of an item, for comparing versions side by side. */
export interface VersionDetail {
  version: number;
  jobId: string;
  current: boolean;
  files: string[];
  /** The web copies of its outputs: where each is, its format and size. */
  copies: { path: string; format: string; width: number; height: number }[];
  decision: ReviewDecision | null;
  note: string | null;
  decidedAt: number | null;
}

/** Raw time series of a run, bucketed by `bucketMs`: the plots are drawn from these. */
export interface SeriesBuckets {
  sent: { b: number; n: number }[];
  charged: { b: number; credits: number }[];
  refunded: { b: number; credits: number }[];
  ended: { b: number; n: number }[];
  first: number | null;
  last: number | null;
}

const CARD_COLUMNS = `i.id, i.state, i.type, i.model, coalesce(i.spec ->> '$.prompt', '') AS prompt, o.version, o.path AS file, r.decision, r.note`;
/** The current version's first verified output, and the decision on it. */
const CARD_JOINS = `LEFT JOIN outputs o ON o.item_id = i.id AND o.idx = 1 AND o.superseded_at IS NULL AND o.sha256 IS NOT NULL
  LEFT JOIN reviews r ON r.item_id = i.id AND r.version = o.version`;

/**
 * What `genbatch review` reads of the state: pages of cards by filter, the
 * outputs downloaded since it last looked, an item's versions, and the run's
 * events bucketed for the plots. Reads only; short statements, so a run that
 * holds the state is never kept waiting.
 */
export class ReviewQueries {
  private readonly newestStmt;
  private readonly versionsStmt;
  private readonly modelsStmt;
  private readonly cache = new Map<string, Statement<unknown[], unknown>>();

  constructor(private readonly db: Db) {
    this.newestStmt = db.prepare<[number, number], NewOutput>(
      `SELECT o.rowid, o.item_id AS itemId, o.path, i.type, o.version, o.downloaded_at AS downloadedAt
       FROM outputs o JOIN items i ON i.id = o.item_id
       WHERE o.downloaded_at >= ? AND o.sha256 IS NOT NULL AND o.path IS NOT NULL
       ORDER BY o.downloaded_at DESC, o.rowid DESC LIMIT ?`,
    );
    this.versionsStmt = db.prepare<
      [string],
      {
        version: number;
        job_id: string;
        current: number;
        path: string;
        decision: ReviewDecision | null;
        note: string | null;
        decided_at: number | null;
        copies: string;
      }
    >(
      `SELECT o.version, o.job_id, o.superseded_at IS NULL AS current, o.path, r.decision, r.note, r.decided_at,
              (SELECT json_group_array(json_object('path', d.path, 'format', d.format, 'width', d.width, 'height', d.height))
               FROM derivatives d WHERE d.job_id = o.job_id AND d.idx = o.idx) AS copies
       FROM outputs o LEFT JOIN reviews r ON r.item_id = o.item_id AND r.version = o.version
       WHERE o.item_id = ? AND o.sha256 IS NOT NULL AND o.path IS NOT NULL ORDER BY o.version, o.idx`,
    );
    this.modelsStmt = db.prepare<[], string>('SELECT DISTINCT model FROM items ORDER BY model').pluck();
  }

  /** A slice of the grid: the cards that match, in manifest order, and how many match in all. */
  page(filter: ReviewFilter, offset: number, limit: number): { total: number; cards: ReviewCard[] } {
    const { where, params, joined } = whereOf(filter);
    const cards = this.prepared(
      `SELECT ${CARD_COLUMNS} FROM items i ${CARD_JOINS} WHERE ${where} ORDER BY i.seq, i.rowid LIMIT @limit OFFSET @offset`,
    ).all({ ...params, limit, offset }) as ReviewCard[];
    // The whole of an unfiltered grid is the tally's (a few rows), not a count of every item.
    const total = where === 'i.removed = 0' ? this.itemCount() : this.count(where, params, joined);
    return { total, cards };
  }

  /** The cards of these items (a refresh of the ones on screen). */
  cards(ids: readonly string[]): ReviewCard[] {
    return this.prepared(
      `SELECT ${CARD_COLUMNS} FROM items i ${CARD_JOINS} WHERE i.id IN (SELECT value FROM json_each(?)) ORDER BY i.seq`,
    ).all(JSON.stringify(ids)) as ReviewCard[];
  }

  /**
   * Outputs downloaded at or after `since` (ms), newest first, at most
   * `limit`. By download time, not rowid: an output's row is made when its
   * name is claimed, before its bytes, so rows are verified out of order.
   */
  downloadedSince(since: number, limit: number): NewOutput[] {
    return this.newestStmt.all(since, limit);
  }

  /** Every version of an item on disk, with its decision, oldest first. */
  versions(itemId: string): VersionDetail[] {
    const versions: VersionDetail[] = [];
    for (const row of this.versionsStmt.all(itemId)) {
      const last = versions.at(-1);
      const copies = JSON.parse(row.copies) as VersionDetail['copies'];
      if (last?.version === row.version) {
        last.files.push(row.path);
        last.copies.push(...copies);
      } else
        versions.push({
          version: row.version,
          jobId: row.job_id,
          current: row.current === 1,
          files: [row.path],
          copies,
          decision: row.decision,
          note: row.note,
          decidedAt: row.decided_at,
        });
    }
    return versions;
  }

  /** Changes when another connection (the run) commits: the live view recomputes only then. */
  dataVersion(): number {
    return this.db.pragma('data_version', { simple: true }) as number;
  }

  /** Submissions sent at or after `since` (ms): the pace against the key's limit. */
  sentSince(since: number): number {
    return (this.prepared('SELECT count(*) AS n FROM attempts WHERE sent_at >= ?').get(since) as { n: number }).n;
  }

  models(): string[] {
    return this.modelsStmt.all();
  }

  /** The run's submissions, charges, refunds and ends per bucket of `bucketMs`. */
  series(bucketMs: number): SeriesBuckets {
    const bucketed = (column: string, what: string) =>
      this.prepared(
        `SELECT CAST(${column} / @w AS INTEGER) AS b, ${what} FROM attempts WHERE ${column} IS NOT NULL GROUP BY 1 ORDER BY 1`,
      ).all({ w: bucketMs });
    const span = this.prepared(
      'SELECT min(sent_at) AS first, max(max(coalesce(ended_at, 0)), max(coalesce(sent_at, 0))) AS last FROM attempts WHERE sent_at IS NOT NULL',
    ).get() as { first: number | null; last: number | null };
    return {
      sent: bucketed('sent_at', 'count(*) AS n') as SeriesBuckets['sent'],
      charged: bucketed('accepted_at', 'sum(charged) AS credits') as SeriesBuckets['charged'],
      refunded: bucketed('ended_at', 'sum(refunded) AS credits') as SeriesBuckets['refunded'],
      ended: bucketed('ended_at', 'count(*) AS n') as SeriesBuckets['ended'],
      first: span.first,
      last: span.last,
    };
  }

  private itemCount(): number {
    return (this.prepared('SELECT coalesce(sum(n), 0) AS n FROM item_tally').get() as { n: number }).n;
  }

  /** How many match: the joins (an outputs and a reviews lookup per item) only when the filter reads them. */
  private count(where: string, params: Record<string, unknown>, joined: boolean): number {
    const from = joined ? `items i ${CARD_JOINS}` : 'items i';
    return (this.prepared(`SELECT count(*) AS n FROM ${from} WHERE ${where}`).get(params) as { n: number }).n;
  }

  /** Statements by their text: the filters make a handful of shapes, each prepared once. */
  private prepared(sql: string): Statement<unknown[], unknown> {
    let stmt = this.cache.get(sql);
    if (!stmt) {
      stmt = this.db.prepare<unknown[], unknown>(sql);
      this.cache.set(sql, stmt);
    }
    return stmt;
  }
}

/**
 * The filter as SQL over `i` (items), `o` (current output) and `r` (its
 * review); values are always parameters. `joined`: it reads `o` or `r`.
 */
function whereOf(filter: ReviewFilter): { where: string; params: Record<string, unknown>; joined: boolean } {
  const clauses = ['i.removed = 0'];
  const params: Record<string, unknown> = {};
  if (filter.state && (ITEM_STATES as readonly string[]).includes(filter.state)) {
    clauses.push('i.state = @state');
    params.state = filter.state;
  }
  if (filter.model) {
    clauses.push('i.model = @model');
    params.model = filter.model;
  }
  if (filter.review === 'unreviewed') clauses.push('o.version IS NOT NULL AND r.decision IS NULL');
  else if (filter.review === 'approved' || filter.review === 'rejected') {
    clauses.push('r.decision = @decision');
    params.decision = filter.review;
  }
  // LIKE ignores ASCII case and is SQLite's fastest scan of the text (a lower() of every spec took twice as long).
  const words = (filter.search ?? '').split(/\s+/).filter(Boolean).slice(0, 8);
  words.forEach((word, k) => {
    clauses.push(`(i.id LIKE @w${k} ESCAPE '\\' OR i.spec LIKE @w${k} ESCAPE '\\')`);
    params[`w${k}`] = `%${word.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  });
  return { where: clauses.join(' AND '), params, joined: filter.review !== undefined };
}
