import type { Statement } from 'better-sqlite3';
import type { ReviewCardData } from '../browser/data.js';
import type { Db } from './db.js';
import type { ReviewDecision } from './reviews.js';
import { KeptTotals } from './review-totals.js';
import { DecideQueries, type Unlocks } from './review-decide.js';
import { type GridQuery, queryOf, type ReviewFilter, totalKey } from './review-filter.js';
import { ITEM_STATES, type ItemState } from './machine/states.js';
import { CARD_WIDTH } from '../browser/data.js';

/** A slice as the page asks for it: a search most items match may come before its count. */
export interface CardsSlice {
  /** How many match in all; null while not counted yet (`atLeast` then). */
  total: number | null;
  atLeast?: number;
  cards: ReviewCard[];
}

/** One card of the review grid (the page's shape), with the state and the decision as the store types them. */
export interface ReviewCard extends ReviewCardData {
  state: ItemState;
  decision: ReviewDecision | null;
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

/** A card's web copy: the smallest at least CARD_WIDTH wide, else the largest. */
const CARD_COPY = `(SELECT d.path FROM derivatives d WHERE d.job_id = o.job_id AND d.idx = o.idx
  ORDER BY d.width < ${CARD_WIDTH}, CASE WHEN d.width >= ${CARD_WIDTH} THEN d.width ELSE -d.width END LIMIT 1)`;
const CARD_COLUMNS = `i.id, i.state, i.type, i.model, coalesce(i.spec ->> '$.prompt', '') AS prompt, o.version, o.path AS file, ${CARD_COPY} AS copy, r.decision, r.note, i.spec -> '$.values' AS values_json`;
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
  private readonly tagsStmt;
  private readonly cache = new Map<string, Statement<unknown[], unknown>>();
  /** The search whose matches temp.search_hits holds, and the state's data version then. */
  private hits: { match: string; version: number } | undefined;
  private readonly totals;
  /** The decide filter's gates, and what approving a card would unlock. */
  private readonly decide;

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
    this.modelsStmt = db.prepare<[], string>(skipScan('items', 'model', 'removed = 0')).pluck();
    this.tagsStmt = db.prepare<[], string>(skipScan('item_tags', 'tag')).pluck();
    this.totals = new KeptTotals(db);
    this.decide = new DecideQueries(db);
  }

  /**
   * A slice of the grid: the cards that match, in manifest order, and how many match in all. Every filter is a
   * range of an index (state, model, review, tag) or the search index; the count comes first, and says how the
   * slice is best read: the few matches sorted, or manifest order walked keeping those that match.
   */
  page(filter: ReviewFilter, offset: number, limit: number): { total: number; cards: ReviewCard[] } {
    if (filter.review === 'decide') return this.decidePage(offset, limit);
    const q = queryOf(filter);
    const total = this.countOf(q);
    return { total, cards: this.withFacts(this.cardsOf(q, offset, limit, total)) };
  }

  /** What approving these gates would unlock now, and up to what each one's chain may spend. */
  unlocksOf(ids: readonly string[]): Map<string, Unlocks> {
    return this.decide.unlocksOf(ids);
  }

  /** The decide filter: the gates items wait on that can be decided now, most credits unlocked first. */
  private decidePage(offset: number, limit: number): { total: number; cards: ReviewCard[] } {
    const gates = this.decide.list();
    const ids = gates.slice(offset, offset + limit).map((g) => g.id);
    const byId = new Map(this.cards(ids).map((card) => [card.id, card]));
    return { total: gates.length, cards: ids.flatMap((id) => byId.get(id) ?? []) };
  }

  /** Each card's row values, and what approving it would unlock where it is a gate to decide. */
  private withFacts(rows: ReviewCard[]): ReviewCard[] {
    const unlocks = this.decide.unlocksOf(rows.filter((r) => r.version !== null && !r.decision).map((r) => r.id));
    return rows.map((row) => {
      const { values_json, ...card } = row as ReviewCard & { values_json: string | null };
      const values = values_json ? (JSON.parse(values_json) as Record<string, string>) : undefined;
      const unlocked = unlocks.get(card.id);
      return { ...card, ...(values ? { values } : {}), ...(unlocked ? { unlocks: unlocked } : {}) };
    });
  }

  /**
   * A slice as the page asks for it: the first of a search most items match (one in five or more, seen by
   * counting only that many) comes before its count, `total` null and `atLeast` the matches seen, and `count`
   * counts it (a 6-letter word every item holds took 11-20 ms to count, its first slice 3). Any other, as `page`.
   */
  slice(filter: ReviewFilter, offset: number, limit: number): CardsSlice {
    if (filter.review === 'decide') return this.decidePage(offset, limit);
    const q = queryOf(filter);
    const key = totalKey(q);
    // A scrolled slice, another filter beside, or an item removed: counted first.
    if (offset > 0 || q.match === undefined || q.clauses.length > 0 || this.anyRemoved())
      return this.page(filter, offset, limit);
    if (this.totals.get(key) !== undefined) return this.page(filter, offset, limit);
    const enough = Math.max(1, Math.ceil(this.itemCount() / DENSE));
    const seen = this.get(
      'SELECT count(*) AS n FROM (SELECT rowid FROM item_search WHERE item_search MATCH @match LIMIT @enough)',
      { ...q.params, enough },
    );
    if (seen >= enough) return { total: null, atLeast: seen, cards: this.withFacts(this.cardsOf(q, 0, limit, seen)) };
    // Fewer than enough: all there are, counted.
    this.totals.set(key, seen);
    return { total: seen, cards: this.withFacts(this.cardsOf(q, 0, limit, seen)) };
  }

  /** The cards of a slice, `total` (or as many as seen) matching: which says how the slice is best read. */
  private cardsOf(q: GridQuery, offset: number, limit: number, total: number): ReviewCard[] {
    if (total === 0 || offset >= total) return [];
    const few = q.narrowing && total <= FEW;
    const search = q.match === undefined ? [] : [this.searchClause(q.match, few, offset, total)];
    const from = few ? 'items i' : `items i INDEXED BY ${q.walk}`;
    const removed = few ? '+i.removed = 0' : 'i.removed = 0';
    // The slice is found in the index alone (a jump past 50,000 cards skips index entries, not joins), then read.
    return this.prepared(
      `SELECT ${CARD_COLUMNS} FROM (
         SELECT i.rowid AS slice FROM ${from} WHERE ${[removed, ...q.clauses, ...search].join(' AND ')}
         ORDER BY i.seq, i.rowid LIMIT @limit OFFSET @offset
       ) JOIN items i ON i.rowid = slice ${CARD_JOINS} ORDER BY i.seq, i.rowid`,
    ).all({ ...q.params, limit, offset }) as ReviewCard[];
  }

  /**
   * How a search's matches are read: kept ones from their table; a few from the index, then sorted; the first
   * slice of a search most items match by asking the index of each item walked (it finds its slice in a few
   * hundred); any other slice from the matches kept once in a table, so scrolling reads that, not the index.
   */
  private searchClause(match: string, few: boolean, offset: number, total: number): string {
    if (this.hitsKept(match)) return KEPT_HITS;
    if (few) return 'i.rowid IN (SELECT rowid FROM item_search WHERE item_search MATCH @match)';
    if (offset === 0 && total * DENSE >= this.itemCount())
      return 'EXISTS (SELECT 1 FROM item_search WHERE item_search MATCH @match AND rowid = i.rowid)';
    this.keepHits(match);
    return KEPT_HITS;
  }

  /** How many items a filter matches: what `page` answers as its total. */
  count(filter: ReviewFilter): number {
    if (filter.review === 'decide') return this.decide.list().length;
    return this.countOf(queryOf(filter));
  }

  /**
   * The filters the page offers in its lists (each review, state and model, the first tags): what a reviewer
   * picks first. Counting them once the page is shown reads their indexes into the cache, and keeps their totals
   * while the state is unchanged: an 83,000-item count read cold took 15-20 ms of a first question's 50.
   */
  offeredFilters(): ReviewFilter[] {
    return [
      ...(['unreviewed', 'approved', 'rejected', 'decide'] as const).map((review) => ({ review })),
      ...ITEM_STATES.map((state) => ({ state })),
      ...this.models().map((model) => ({ model })),
      ...this.tags()
        .slice(0, OFFERED_TAGS)
        .map((tag) => ({ tag })),
    ];
  }

  /** A total counted is kept while the state is unchanged. */
  private countOf(q: GridQuery): number {
    const key = totalKey(q);
    let total = this.totals.get(key);
    if (total === undefined) {
      total = this.total(q);
      this.totals.set(key, total);
    }
    return total;
  }

  /** How many match: a tally, the range of one index, or the search index's own count. */
  private total(q: GridQuery): number {
    const filters = q.clauses.length + (q.match === undefined ? 0 : 1);
    if (filters === 0) return this.itemCount();
    if (!q.narrowing) return this.countWhere(q.clauses, q.params);
    // Nothing removed (the usual case): a search or a tag alone is counted in its own index.
    const alone = filters === 1 && !this.anyRemoved();
    if (alone && q.match !== undefined)
      return this.hitsKept(q.match)
        ? this.get('SELECT count(*) AS n FROM temp.search_hits', {})
        : this.get('SELECT count(*) AS n FROM item_search WHERE item_search MATCH @match', q.params);
    if (alone && q.params.tag !== undefined)
      return this.get('SELECT count(*) AS n FROM item_tags WHERE tag = @tag', q.params);
    if (q.match === undefined) return this.countWhere(q.clauses, q.params);
    this.keepHits(q.match);
    return this.countWhere([...q.clauses, KEPT_HITS], q.params);
  }

  /**
   * The items a search matches, found once in the search index and kept in a temporary table while the state is
   * unchanged: the slices scrolled to and the counts with other filters read that table, not the index again.
   */
  private keepHits(match: string): void {
    if (this.hitsKept(match)) return;
    this.totals.unchanged(() => {
      this.db.exec('CREATE TEMP TABLE IF NOT EXISTS search_hits (id INTEGER PRIMARY KEY)');
      this.db.transaction(() => {
        this.prepared('DELETE FROM temp.search_hits').run();
        this.prepared('INSERT INTO temp.search_hits SELECT rowid FROM item_search WHERE item_search MATCH @match').run({
          match,
        });
      })();
    });
    this.hits = { match, version: this.dataVersion() };
  }

  private hitsKept(match: string): boolean {
    return this.hits?.match === match && this.hits.version === this.dataVersion();
  }

  private countWhere(clauses: readonly string[], params: Record<string, unknown>): number {
    return this.get(`SELECT count(*) AS n FROM items i WHERE ${['i.removed = 0', ...clauses].join(' AND ')}`, params);
  }

  private anyRemoved(): boolean {
    return this.get('SELECT EXISTS (SELECT 1 FROM items WHERE removed = 1) AS n', {}) === 1;
  }

  private get(sql: string, params: Record<string, unknown>): number {
    return (this.prepared(sql).get(params) as { n: number }).n;
  }

  /** The cards of these items (a refresh of the ones on screen). */
  cards(ids: readonly string[]): ReviewCard[] {
    return this.withFacts(
      this.prepared(
        `SELECT ${CARD_COLUMNS} FROM items i ${CARD_JOINS} WHERE i.id IN (SELECT value FROM json_each(?)) ORDER BY i.seq`,
      ).all(JSON.stringify(ids)) as ReviewCard[],
    );
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

  /** The models of the items, each once: a skip from one to the next in the model index, not a read of every item. */
  models(): string[] {
    return this.modelsStmt.all();
  }

  /** The tags of the items, each once, as the models are found. */
  tags(): string[] {
    return this.tagsStmt.all();
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

  /** Every item the manifest still has: the tally counts removed items too, and those are few (a partial index). */
  private itemCount(): number {
    return this.get(
      'SELECT (SELECT coalesce(sum(n), 0) FROM item_tally) - (SELECT count(*) FROM items WHERE removed = 1) AS n',
      {},
    );
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

/** The tags counted ahead: the first in their order, as the page lists them. */
const OFFERED_TAGS = 50;

/** Matches a search or a tag may have and still be sorted at once (more are read in manifest order). */
const FEW = 2_000;

/** A search most items match (one in five or more) finds its first slice by asking the index of each item walked. */
const DENSE = 5;

/** The search's matches, as kept. */
const KEPT_HITS = 'i.rowid IN (SELECT id FROM temp.search_hits)';

/** Each distinct value of an indexed column, found by jumping from one to the next (`where`: on the rows). */
function skipScan(table: string, column: string, where?: string): string {
  const and = where ? ` AND ${where}` : '';
  return `WITH RECURSIVE v(x) AS (
      SELECT min(${column}) FROM ${table} WHERE ${where ?? '1'}
      UNION ALL SELECT (SELECT min(${column}) FROM ${table} WHERE ${column} > v.x${and}) FROM v WHERE v.x IS NOT NULL
    ) SELECT x FROM v WHERE x IS NOT NULL`;
}
