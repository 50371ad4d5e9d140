import type { Model } from '../api/index.js';
import type { Manifest, ResolvedItem } from '../manifest/index.js';

export type PriceSource = 'catalog' | 'manifest' | 'unknown';
export interface Price {
  credits?: number;
  source: PriceSource;
}

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => v !== null && typeof v === 'object' && !Array.isArray(v);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);

/**
 * A video price from a catalog entry. The spec does not show the price fields,
 * so a few plain shapes are recognised; anything else is "unknown", never a guess.
 */
export function catalogVideoPrice(raw: Rec, resolution: string, duration: string): number | undefined {
  for (const name of ['prices', 'pricing', 'creditCosts', 'creditCost', 'credits']) {
    const field = raw[name];
    if (Array.isArray(field)) {
      for (const entry of field) {
        if (!isRec(entry) || String(entry.resolution) !== resolution || String(entry.duration) !== duration) continue;
        const credits = num(entry.credits) ?? num(entry.creditCost) ?? num(entry.cost) ?? num(entry.price);
        if (credits !== undefined) return credits;
      }
    } else if (isRec(field)) {
      const byResolution = field[resolution];
      if (isRec(byResolution)) {
        const credits = num(byResolution[duration]);
        if (credits !== undefined) return credits;
      }
    }
  }
  for (const name of ['creditCostPerSecond', 'creditsPerSecond']) {
    const field = raw[name];
    const perSecond = isRec(field) ? num(field[resolution]) : num(field);
    if (perSecond !== undefined) return perSecond * Number(duration);
  }
  return undefined;
}

function manifestPrice(
  prices: Manifest['prices'],
  item: Omit<ResolvedItem, 'where'>,
  resolution?: string,
  duration?: string,
): number | undefined {
  const entry = prices?.[item.model];
  if (typeof entry === 'number') return entry;
  if (entry && resolution && duration) return entry[resolution]?.[duration];
  return undefined;
}

/** What one job of this item costs: the catalog first, then the manifest's `prices`, else unknown. */
export function priceOf(
  item: Omit<ResolvedItem, 'where'>,
  model: Model | undefined,
  prices: Manifest['prices'],
): Price {
  if (item.type === 'image') {
    if (model?.creditCost !== undefined) return { credits: model.creditCost, source: 'catalog' };
    const own = manifestPrice(prices, item);
    return own !== undefined ? { credits: own, source: 'manifest' } : { source: 'unknown' };
  }
  // The service's defaults for omitted values are not shown: only a single allowed value is certain.
  const resolution = item.resolution ?? (model?.resolutions?.length === 1 ? model.resolutions[0] : undefined);
  const duration = item.duration ?? (model?.durations?.length === 1 ? model.durations[0] : undefined);
  const fromCatalog = model && resolution && duration ? catalogVideoPrice(model.raw, resolution, duration) : undefined;
  if (fromCatalog !== undefined) return { credits: fromCatalog, source: 'catalog' };
  const own = manifestPrice(prices, item, resolution, duration);
  return own !== undefined ? { credits: own, source: 'manifest' } : { source: 'unknown' };
}
