import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type ReviewFilter, Store } from '../../src/store/index.js';
import { decide } from '../helpers/decide.js';

/** Prompts as catalogs write them: accents, capitals, words that differ only in those. */
const PROMPTS = [
  'Crème brûlée ramekin, studio photo',
  'CREME pot with a lid',
  'Café au lait cup, matte',
  'cafe table, lifestyle',
  'A naïve Élan vase',
  'Plain mug',
  'Straße sign mug',
  'ÇA VA bowl',
];
const MODELS = ['studio-xl', 'studio-lite', 'studio-edit'];
const N = 240;

interface Made {
  id: string;
  seq: number;
  model: string;
  prompt: string;
  values: Record<string, string>;
  tags: string[];
}

function itemOf(i: number): Made {
  return {
    id: `sku-${String(i).padStart(4, '0')}`,
    seq: i,
    model: MODELS[i % 3]!,
    prompt: `${PROMPTS[i % PROMPTS.length]} ${i}`,
    values: { colour: i % 2 ? 'Vert sauge' : 'terracotta' },
    tags: i % 4 === 0 ? ['spring'] : i % 4 === 1 ? ['spring', 'line-é'] : [],
  };
}

/** Items written by a sync, as a run writes a manifest's (the same content hash, whatever the tags and values). */
function sync(store: Store, list: Made[], now: number): void {
  store.itemSync.sync(
    list.map((m) => ({
      id: m.id,
      seq: m.seq,
      type: 'image' as const,
      model: m.model,
      contentHash: `h${m.seq}`,
      spec: JSON.stringify({
        id: m.id,
        type: 'image',
        model: m.model,
        prompt: m.prompt,
        values: m.values,
        ...(m.tags.length ? { tags: m.tags } : {}),
      }),
      dependsOn: [],
    })),
    now,
    false,
  );
}

/** A state as a run leaves it: items written by a sync, attempted, most done with an output, some reviewed. */
function stateWith(items: Made[], path: string): Store {
  const store = Store.open(path);
  sync(store, items, 1_000);
  store.tx(() => {
    for (const m of items) {
      const job = `job-${m.seq}`;
      store.lifecycle.startAttempt(m.id, 1, `key-${m.seq}`, '{}', 2_000, 'fp');
      store.lifecycle.recordSent(m.id, 1, 2_000, 'fp');
      store.lifecycle.recordAccepted(m.id, 1, job, 8, 0, 2_050);
      if (m.seq % 7 === 6) {
        const error = { code: 'GENERATION_FAILED', message: 'failed' };
        store.lifecycle.recordEnded(m.id, 1, { jobId: job, status: 'failed', refunded: 8, refundDay: 0, error }, 3_000);
        store.lifecycle.endWithoutOutput(m.id, 'failed', error, 3_000);
        continue;
      }
      store.lifecycle.recordEnded(m.id, 1, { jobId: job, status: 'completed', refunded: 0, refundDay: 0 }, 3_000);
      store.outputFiles.claimPath(job, 1, m.id, `${m.id}-1.png`, 1, 3_000);
      const file = { path: `${m.id}-1.png`, bytes: 10, sha256: 'ab'.repeat(32), contentType: 'image/png', mtimeMs: 1 };
      store.lifecycle.outputSaved(m.id, job, 1, file, 3_100, true);
      if (m.seq % 5 === 0) decide(store, m.id, 1, 'approved', undefined, 4_000);
      if (m.seq % 5 === 1) decide(store, m.id, 1, 'rejected', 'no', 4_000);
    }
  });
  // A later version of the manifest without every tenth item: those are removed, never shown.
  sync(
    store,
    items.filter((m) => m.seq % 10 !== 9),
    1_000,
  );
  // Undo: a decision cleared is unreviewed again.
  decide(store, 'sku-0005', 1, null, undefined, 5_000);
  return store;
}

/** What users expect of a search: any case, with or without accents, each word somewhere in the item. */
const fold = (text: string) => text.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();

function expected(items: Made[], filter: ReviewFilter): string[] {
  return items
    .filter((m) => m.seq % 10 !== 9)
    .filter((m) => {
      const failed = m.seq % 7 === 6;
      const review = failed
        ? null
        : m.seq === 5
          ? 'unreviewed'
          : m.seq % 5 === 0
            ? 'approved'
            : m.seq % 5 === 1
              ? 'rejected'
              : 'unreviewed';
      if (filter.state && filter.state !== (failed ? 'failed' : 'done')) return false;
      if (filter.model && filter.model !== m.model) return false;
      if (filter.review && filter.review !== review) return false;
      if (filter.tag && !m.tags.includes(filter.tag)) return false;
      const text = fold([m.id, m.prompt, ...Object.values(m.values), ...m.tags].join('\n'));
      return (filter.search ?? '')
        .split(/\s+/)
        .filter(Boolean)
        .every((w) => text.includes(fold(w)));
    })
    .map((m) => m.id);
}

/** Every page of a filter, read as the grid reads them. */
function allPages(store: Store, filter: ReviewFilter, size = 25): { totals: Set<number>; ids: string[] } {
  const totals = new Set<number>();
  const ids: string[] = [];
  for (let offset = 0; ; offset += size) {
    const page = store.reviewQueries.page(filter, offset, size);
    totals.add(page.total);
    ids.push(...page.cards.map((c) => c.id));
    if (page.cards.length < size) break;
  }
  return { totals, ids };
}

const FILTERS: ReviewFilter[] = [
  {},
  { state: 'failed' },
  { state: 'done' },
  { model: 'studio-lite' },
  { review: 'unreviewed' },
  { review: 'approved' },
  { review: 'rejected' },
  { tag: 'spring' },
  { tag: 'line-é' },
  { search: 'creme' },
  { search: 'CRÈME' },
  { search: 'brulee ramekin' },
  { search: 'élan' },
  { search: 'ELAN' },
  { search: 'cafe' },
  { search: 'CAFÉ AU' },
  { search: 'sauge' },
  { search: 'sku-012' },
  { search: 'nothing-matches' },
  { search: 'mug', model: 'studio-xl', review: 'unreviewed' },
  { search: 'cafe', tag: 'spring' },
  { tag: 'spring', state: 'done', review: 'approved' },
  { model: 'studio-edit', state: 'failed' },
];

describe('the review grid: search, filters and their counts, from the state', () => {
  const items = Array.from({ length: N }, (_, i) => itemOf(i));
  const store = stateWith(items, join(mkdtempSync(join(tmpdir(), 'genbatch-grid-')), 's.sqlite'));

  it.each(FILTERS.map((f) => [JSON.stringify(f), f] as const))(
    '%s: the cards in manifest order, and a count that matches them',
    (_, filter) => {
      const want = expected(items, filter);
      const { totals, ids } = allPages(store, filter);
      expect(ids).toEqual(want);
      expect([...totals]).toEqual([want.length]);
    },
  );

  it('reads a big state the same way, however many match: a few, most, or some, first slice or scrolled', () => {
    // Past 2,000 matches a search walks manifest order: asking the index item by item for a first slice of a
    // search most items match, else from its matches kept in a table.
    const many = Array.from({ length: 6_000 }, (_, i) => itemOf(i));
    const big = stateWith(many, join(mkdtempSync(join(tmpdir(), 'genbatch-grid-')), 'big.sqlite'));
    try {
      for (const filter of [
        { search: 'sku' },
        { search: 'mug' },
        { search: 'CREME' },
        { search: 'sauge', review: 'unreviewed' as const },
        { search: 'sku', tag: 'spring' },
        { tag: 'spring' },
      ]) {
        const want = expected(many, filter);
        for (const size of [120, 997]) {
          const { totals, ids } = allPages(big, filter, size);
          expect(ids, JSON.stringify(filter)).toEqual(want);
          expect([...totals]).toEqual([want.length]);
        }
        // A jump into the middle with another search's matches kept: this one's are found afresh.
        big.reviewQueries.page({ search: 'vase' }, 1_000, 1);
        const middle = Math.floor(want.length / 2);
        const jumped = big.reviewQueries.page(filter, middle, 3);
        expect(jumped.cards.map((c) => c.id)).toEqual(want.slice(middle, middle + 3));
        expect(jumped.total).toBe(want.length);
      }
    } finally {
      big.close();
    }
  });

  it('finds accented words without accents, and plain words in accented text, in any case', () => {
    const ids = (search: string) => store.reviewQueries.page({ search }, 0, 500).cards.map((c) => c.prompt);
    expect(ids('creme').every((p) => /crème|creme/i.test(p))).toBe(true);
    expect(ids('creme').some((p) => p.startsWith('Crème'))).toBe(true);
    expect(ids('creme').some((p) => p.startsWith('CREME'))).toBe(true);
    expect(ids('CRÈME')).toEqual(ids('creme'));
    expect(ids('Brûlée')).toEqual(ids('brulee'));
    expect(ids('naive').every((p) => p.includes('naïve'))).toBe(true);
    expect(ids('naive').length).toBeGreaterThan(0);
  });

  it.each(['12', 'Va', 'é'])(
    'a word too short for the index (%s) is still found, in the same text, by a scan that folds ASCII case',
    (word) => {
      const ascii = (text: string) => text.replace(/[A-Z]/g, (c) => c.toLowerCase());
      const want = items
        .filter((m) => m.seq % 10 !== 9)
        .filter((m) => ascii([m.id, m.prompt, ...Object.values(m.values), ...m.tags].join('\n')).includes(ascii(word)))
        .map((m) => m.id);
      const got = allPages(store, { search: word });
      expect(got.ids).toEqual(want);
      expect([...got.totals]).toEqual([want.length]);
    },
  );

  it('follows an item whose tags or row values change: search and tags read its spec as it is now', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'genbatch-grid-')), 'c.sqlite');
    const few = items.slice(0, 20).map((m) => ({ ...m, tags: [] as string[] }));
    const changing = stateWith(few, path);
    try {
      expect(changing.reviewQueries.page({ tag: 'autumn' }, 0, 50).total).toBe(0);
      // Same content (the request is unchanged), other tags and values: the spec is brought up to date.
      const moved = few.map((m) => (m.seq === 3 ? { ...m, tags: ['autumn'], values: { colour: 'Ocre brûlé' } } : m));
      sync(
        changing,
        moved.filter((m) => m.seq % 10 !== 9),
        6_000,
      );
      const ids = (filter: ReviewFilter) => changing.reviewQueries.page(filter, 0, 50).cards.map((c) => c.id);
      expect(ids({ tag: 'autumn' })).toEqual(['sku-0003']);
      expect(ids({ search: 'OCRE brule' })).toEqual(['sku-0003']);
      expect(ids({ search: 'sauge' })).not.toContain('sku-0003');
      expect(ids({ search: 'sauge' }).length).toBeGreaterThan(0);
      expect(changing.reviewQueries.tags()).toEqual(['autumn']);
    } finally {
      changing.close();
    }
  });

  it('counts anew after any change: a decision made here, or a commit of the run beside', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'genbatch-grid-')), 'n.sqlite');
    const few = items.slice(0, 30);
    const run = stateWith(few, path);
    const reviewer = Store.openForReview(path);
    try {
      const count = (filter: ReviewFilter) => reviewer.reviewQueries.page(filter, 0, 5).total;
      const approved = expected(few, { review: 'approved' }).length;
      // Every offered filter counted ahead, as the review app does once its page is shown.
      for (const filter of reviewer.reviewQueries.offeredFilters())
        expect(reviewer.reviewQueries.count(filter), JSON.stringify(filter)).toBe(expected(few, filter).length);
      expect(count({ review: 'approved' })).toBe(approved);
      // A search scrolled past its first slice keeps its matches in a table: the counts are still right after.
      reviewer.reviewQueries.page({ search: 'sku' }, 5, 5);
      const unreviewed = expected(few, { review: 'unreviewed' });
      decide(reviewer, unreviewed[0]!, 1, 'approved', undefined, 6_000);
      expect(count({ review: 'approved' })).toBe(approved + 1);
      expect(count({ review: 'unreviewed' })).toBe(unreviewed.length - 1);
      decide(run, unreviewed[1]!, 1, 'approved', undefined, 6_000);
      expect(count({ review: 'approved' })).toBe(approved + 2);
      expect(count({ review: 'unreviewed' })).toBe(unreviewed.length - 2);
    } finally {
      reviewer.close();
      run.close();
    }
  });

  it('answers the first slice of a search most items match before counting it, then counts it', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'genbatch-grid-')), 'd.sqlite');
    // No item removed: a search alone is counted in its own index.
    const all = items.slice(0, 100);
    const dense = Store.open(path);
    sync(dense, all, 1_000);
    try {
      const queries = dense.reviewQueries;
      // Nothing removed, nothing run: what matches is what the text holds.
      const matching = (filter: ReviewFilter) =>
        all
          .filter((m) => !filter.model || m.model === filter.model)
          .filter((m) =>
            fold([m.id, m.prompt, ...Object.values(m.values), ...m.tags].join('\n')).includes(filter.search!),
          )
          .map((m) => m.id);
      const want = matching({ search: 'sku' });
      const first = queries.slice({ search: 'sku' }, 0, 25);
      // A fifth of the items seen to match is enough: the cards come, the count follows when asked.
      expect(first).toMatchObject({ total: null, atLeast: 20 });
      expect(first.cards.map((c) => c.id)).toEqual(want.slice(0, 25));
      expect(queries.count({ search: 'sku' })).toBe(want.length);
      expect(queries.slice({ search: 'sku' }, 0, 25).total).toBe(want.length);
      // Scrolled, a few matches, or another filter beside: counted first, as always.
      expect(queries.slice({ search: 'creme' }, 25, 25).total).toBe(matching({ search: 'creme' }).length);
      const few = queries.slice({ search: 'sku-001' }, 0, 25);
      expect([few.total, few.cards.map((c) => c.id)]).toEqual([10, matching({ search: 'sku-001' })]);
      const mugs = queries.slice({ search: 'mug', model: 'studio-xl' }, 0, 25);
      expect([mugs.total, mugs.cards.map((c) => c.id)]).toEqual([
        matching({ search: 'mug', model: 'studio-xl' }).length,
        matching({ search: 'mug', model: 'studio-xl' }),
      ]);
    } finally {
      dense.close();
    }
  });

  it('lists the models and tags of the items, each once', () => {
    expect(store.reviewQueries.models()).toEqual(['studio-edit', 'studio-lite', 'studio-xl']);
    expect(store.reviewQueries.tags()).toEqual(['line-é', 'spring']);
  });

  it('a state from before the search index is given one: every item searchable, tagged and reviewed as before', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'genbatch-grid-')), 'old.sqlite');
    const old = stateWith(items, path);
    // Back to schema 24: without what migrations 28, 27, 26 and 25 made.
    old.db.exec(`
      DROP TABLE decisions;
      DROP INDEX attempts_inputs; ALTER TABLE attempts DROP COLUMN inputs;
      DROP TRIGGER IF EXISTS gate_moved; DROP TABLE gates;
      DROP TRIGGER item_search_update; DROP TRIGGER item_search_delete;
      DROP TRIGGER item_tags_update; DROP TRIGGER item_tags_delete;
      DROP TABLE item_search; DROP TABLE item_tags;
      DROP INDEX items_grid_state; DROP INDEX items_grid_model; DROP INDEX items_grid_review; DROP INDEX items_grid; DROP INDEX reviews_by_checks;
      DROP TRIGGER items_review_output; DROP TRIGGER items_review_output_update; DROP TRIGGER items_review_output_delete;
      DROP TRIGGER items_review_decided; DROP TRIGGER items_review_changed; DROP TRIGGER items_review_cleared;
      ALTER TABLE items DROP COLUMN review;
    `);
    old.db.pragma('user_version = 24');
    old.close();
    const migrated = Store.open(path);
    try {
      for (const filter of FILTERS)
        expect(allPages(migrated, filter).ids, JSON.stringify(filter)).toEqual(expected(items, filter));
    } finally {
      migrated.close();
    }
  });
});
