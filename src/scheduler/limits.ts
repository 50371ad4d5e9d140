/** A rate: at most `count` events in any `windowMs`. */
export interface Rate {
  count: number;
  windowMs: number;
}

/** The key's limits as the spec sets them; a key with lower limits lowers them by flag. */
export interface KeyLimits {
  submit: Rate;
  read: Rate;
  upload: Rate;
  maxImagesInFlight: number;
  maxVideosInFlight: number;
  dailyCap: number;
}

export const DEFAULT_KEY_LIMITS: KeyLimits = {
  submit: { count: 10, windowMs: 60_000 },
  read: { count: 120, windowMs: 60_000 },
  upload: { count: 30, windowMs: 60_000 },
  maxImagesInFlight: 10,
  maxVideosInFlight: 5,
  dailyCap: 20_000,
};

/** `N/Ws`, `N/Wm` or `N/Wms`: "10/60s", "10/1m", "10/2s", "5/500ms". */
export function parseRate(text: string): Rate {
  const m = /^\s*(\d+)\s*\/\s*(\d+(?:\.\d+)?)\s*(ms|s|m)\s*$/.exec(text);
  if (!m) throw new Error(`expected a rate like 10/60s or 10/1m, got "${text}"`);
  const count = Number(m[1]);
  const windowMs = Number(m[2]) * (m[3] === 'm' ? 60_000 : m[3] === 's' ? 1000 : 1);
  if (count < 1 || windowMs <= 0)
    throw new Error(`a rate needs at least 1 event in a window longer than 0, got "${text}"`);
  return { count, windowMs };
}

export function formatRate(rate: Rate): string {
  return rate.windowMs % 1000 === 0 ? `${rate.count}/${rate.windowMs / 1000}s` : `${rate.count}/${rate.windowMs}ms`;
}

/** The key's day, over which the daily cap counts; a time-scaled rehearsal shortens it. */
export const KEY_DAY_MS = 86_400_000;

/**
 * What several keys allow together, as one key's limits: their rates added
 * (over the first key's window), their in-flight slots and daily caps summed.
 * The ETA and the estimate of a pool; each key is still paced on its own.
 */
export function combinedLimits(each: readonly KeyLimits[]): KeyLimits {
  const [first, ...rest] = each;
  if (!first) throw new Error('no limits to combine');
  const add = (pick: (l: KeyLimits) => Rate): Rate => {
    const windowMs = pick(first).windowMs;
    return { count: each.reduce((n, l) => n + (pick(l).count * windowMs) / pick(l).windowMs, 0), windowMs };
  };
  if (rest.length === 0) return first;
  return {
    submit: add((l) => l.submit),
    read: add((l) => l.read),
    upload: add((l) => l.upload),
    maxImagesInFlight: each.reduce((n, l) => n + l.maxImagesInFlight, 0),
    maxVideosInFlight: each.reduce((n, l) => n + l.maxVideosInFlight, 0),
    dailyCap: each.reduce((n, l) => n + l.dailyCap, 0),
  };
}
