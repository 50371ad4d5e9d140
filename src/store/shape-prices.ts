import type { Db } from './db.js';

/** What prices an item: its type, model and, for a video, its resolution and duration. */
export interface PriceShape {
  type: string;
  model: string;
  resolution: string | null;
  duration: string | null;
}

const KEY = 'shape_prices';
const keyOf = (s: PriceShape) => `${s.type}\u0000${s.model}\u0000${s.resolution ?? ''}\u0000${s.duration ?? ''}`;

/** The prices a run knew for its items' shapes (the catalog's, the manifest's), kept so status can price what waits. */
export function recordShapePrices(
  store: { setMeta(key: string, value: string): void },
  priced: readonly (PriceShape & { credits: number })[],
): void {
  store.setMeta(KEY, JSON.stringify(priced));
}

/** The recorded price of one job of a shape, if the last run knew one. */
export function shapePrices(db: Db): (shape: PriceShape) => number | undefined {
  const text = db.prepare<[string], string>('SELECT value FROM meta WHERE key = ?').pluck().get(KEY);
  const prices = new Map<string, number>();
  for (const entry of text ? (JSON.parse(text) as (PriceShape & { credits: number })[]) : [])
    prices.set(keyOf(entry), entry.credits);
  return (shape) => prices.get(keyOf(shape));
}
