/** A backoff's two parameters: the first wait and the longest, in ms. */
export interface Backoff {
  firstMs: number;
  longestMs: number;
}

/**
 * The one exponential backoff of every retry, the service's and the
 * bucket's: doubled from `firstMs` at each retry, capped at `longestMs`, its
 * upper half jittered so that many tasks (or processes) do not come back at once.
 */
export function backoffMs(retry: number, { firstMs, longestMs }: Backoff, random: () => number = Math.random): number {
  const ceiling = Math.min(longestMs, firstMs * 2 ** Math.min(retry, 30));
  return ceiling / 2 + random() * (ceiling / 2);
}
