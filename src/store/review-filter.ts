import { searchText } from './search-text.js';
import { ITEM_STATES, type ItemState } from './machine/states.js';
import type { ReviewDecision } from './reviews.js';

/** What the review app filters its grid by; every field optional. */
export interface ReviewFilter {
  /**
   * 'unreviewed': done with no decision on its current version. 'decide': the gates items wait on that can be
   * decided now, most credits unlocked first (not in manifest order).
   */
  review?: ReviewDecision | 'unreviewed' | 'decide' | undefined;
  state?: ItemState | undefined;
  model?: string | undefined;
  tag?: string | undefined;
  /** Words looked for in the item's id, prompt, row values and tags, in any case and with or without accents. */
  search?: string | undefined;
}

/** The filter as clauses over `i` (items), the search apart; values are always parameters. */
export interface GridQuery {
  clauses: string[];
  params: Record<string, unknown>;
  /** The search's words the index can look up, as an FTS5 query (`@match`). */
  match?: string;
  /** A search or a tag: a set of rows, not a range of the items' own indexes. */
  narrowing: boolean;
  /**
   * The index walked in manifest order for a slice: a review's, model's or state's own range when one is asked
   * for (walking every item's for 2,000 failed ones, 1,000 in, took 18-54 ms, their own range 0.1 ms).
   */
  walk: 'items_grid' | 'items_grid_review' | 'items_grid_model' | 'items_grid_state';
}

/** The text the search index holds, read from the item for a word the index cannot look up. */
const SCANNED = `(${searchText('i.')})`;

/** The trigram index finds pieces of 3 characters or more; a shorter word is looked for in the text itself. */
const INDEXED_LENGTH = 3;

export function queryOf(filter: ReviewFilter): GridQuery {
  const clauses: string[] = [];
  const params: Record<string, unknown> = {};
  if (filter.state && (ITEM_STATES as readonly string[]).includes(filter.state)) {
    clauses.push('i.state = @state');
    params.state = filter.state;
  }
  if (filter.model) {
    clauses.push('i.model = @model');
    params.model = filter.model;
  }
  if (filter.review === 'unreviewed' || filter.review === 'approved' || filter.review === 'rejected') {
    clauses.push('i.review = @review');
    params.review = filter.review;
  }
  if (filter.tag) {
    clauses.push('i.rowid IN (SELECT item_rowid FROM item_tags WHERE tag = @tag)');
    params.tag = filter.tag;
  }
  const words = (filter.search ?? '').split(/\s+/).filter(Boolean).slice(0, 8);
  const indexed = words.filter((w) => [...w].length >= INDEXED_LENGTH);
  if (indexed.length) {
    // Each word a phrase: its text as written, quotes doubled, so no word is read as FTS syntax.
    params.match = indexed.map((w) => `"${w.replaceAll('"', '""')}"`).join(' AND ');
  }
  // A word too short for the index: a scan of the same text (LIKE folds ASCII case only, and no accents).
  words
    .filter((w) => [...w].length < INDEXED_LENGTH)
    .forEach((word, k) => {
      // The id and spec as stored first (cheap; they hold every word the text does), then the text itself.
      clauses.push(
        `(i.id LIKE @w${k} ESCAPE '\\' OR i.spec LIKE @w${k} ESCAPE '\\') AND ${SCANNED} LIKE @w${k} ESCAPE '\\'`,
      );
      params[`w${k}`] = `%${word.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    });
  const match = params.match as string | undefined;
  const walk =
    params.review !== undefined
      ? 'items_grid_review'
      : params.model !== undefined
        ? 'items_grid_model'
        : params.state !== undefined
          ? 'items_grid_state'
          : 'items_grid';
  return {
    clauses,
    params,
    ...(match ? { match } : {}),
    narrowing: params.tag !== undefined || match !== undefined,
    walk,
  };
}

/** What a filter's total is kept by: its clauses and values. */
export const totalKey = (q: GridQuery) => JSON.stringify([q.clauses, q.params]);
