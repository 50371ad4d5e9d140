import { z } from 'zod';
import type { ReviewCard, ReviewFilter, Store } from '../store/index.js';

/** Cards a page of the grid may ask for at once. */
const MAX_SLICE = 500;
/** Items one batch decision may name (a selected range): a 10,000-card selection is one request, well within the body limit. */
const MAX_BATCH = 20_000;

const decision = z.enum(['approved', 'rejected']).nullable();
const note = z.string().max(2_000).nullable().optional();
const target = z.object({ itemId: z.string().min(1).max(1_000), version: z.number().int().positive() });

/** POST /api/review: one decision, or the same decision on many items (a selected range); null clears it (undo). */
export const decisionBody = z.union([
  target.extend({ decision, note }),
  z.object({ items: z.array(target).min(1).max(MAX_BATCH), decision, note }),
]);
export type DecisionBody = z.infer<typeof decisionBody>;

/** The grid's query string as a filter and a slice. */
export function sliceOf(url: URL): { filter: ReviewFilter; offset: number; limit: number; screen: number } {
  const q = url.searchParams;
  const int = (name: string, fallback: number, max: number) => {
    const n = Number.parseInt(q.get(name) ?? '', 10);
    return Number.isFinite(n) && n >= 0 ? Math.min(n, max) : fallback;
  };
  const review = q.get('review');
  return {
    filter: {
      review:
        review === 'approved' || review === 'rejected' || review === 'unreviewed' || review === 'decide'
          ? review
          : undefined,
      state: (q.get('state') || undefined) as ReviewFilter['state'],
      model: q.get('model') || undefined,
      tag: q.get('tag') || undefined,
      search: q.get('q') || undefined,
    },
    offset: int('offset', 0, Number.MAX_SAFE_INTEGER),
    limit: int('limit', 100, MAX_SLICE) || 1,
    // Where the page's screen begins in the slice: the thumbnails from there on are made ahead.
    screen: int('screen', 0, MAX_SLICE),
  };
}

/** A card the decision did not take, and why: no such version made, or not the current one (`current` names it). */
export interface RefusedDecision {
  itemId: string;
  version: number;
  reason: 'unknown' | 'not-made' | 'superseded';
  current?: number;
}

/**
 * Applies a decision through the store's one decision call: only the current version, made and verified, is
 * decided, and the record keeps who decided (`by`). Returns the cards as they are now, and the cards refused.
 */
export function applyDecision(
  store: Store,
  body: DecisionBody,
  now: number,
  by: string,
): { cards: ReviewCard[]; refused: RefusedDecision[] } {
  const targets = 'items' in body ? body.items : [{ itemId: body.itemId, version: body.version }];
  const refused: RefusedDecision[] = [];
  const entries = store.decisions.decideAll(
    targets.map((t) => ({ ...t, decision: body.decision, note: body.note, by, now })),
  );
  for (const [i, entry] of entries.entries()) {
    const t = targets[i]!;
    if ('refused' in entry)
      refused.push({
        itemId: t.itemId,
        version: t.version,
        reason: entry.refused,
        ...(entry.refused === 'superseded' ? { current: entry.current } : {}),
      });
  }
  // The cards as they are now, for the page to draw: a slice's worth (the others a page shows come with its next
  // refresh; 10,000 cards read again took most of a bulk decision's time).
  return { cards: store.reviewQueries.cards(targets.slice(0, MAX_SLICE).map((t) => t.itemId)), refused };
}
