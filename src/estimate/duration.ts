import type { KeyLimits } from '../scheduler/limits.js';

/** The spec's typical job durations, in seconds. */
export const TYPICAL_SECONDS = { image: [10, 90], video: [60, 600] } as const;
const mean = (range: readonly [number, number]) => (range[0] + range[1]) / 2;
const DAY_SECONDS = 86_400;

export type Bound = 'submission rate' | 'image slots' | 'video slots' | 'daily cap' | 'dependency chain';

export interface DurationEstimate {
  seconds: number;
  limitedBy: Bound;
  keyDays: number;
}

/**
 * A run's wall time from the limits alone: the slowest of the submission rate
 * and the in-flight slots (at typical job durations), plus one job's tail; and
 * when the credits exceed the daily cap, whole key days spent waiting.
 */
export function estimateDuration(
  /** `keyDays`: the days a plan of the keys' days needs, when there is one (else the credits over the cap). */
  counts: { images: number; videos: number; credits: number; chainSeconds?: number; keyDays?: number },
  limits: KeyLimits,
): DurationEstimate {
  const jobs = counts.images + counts.videos;
  if (jobs === 0) return { seconds: 0, limitedBy: 'submission rate', keyDays: 0 };
  const bounds: [Bound, number][] = [
    ['submission rate', (jobs * limits.submit.windowMs) / 1000 / limits.submit.count],
    ['image slots', (counts.images * mean(TYPICAL_SECONDS.image)) / limits.maxImagesInFlight],
    ['video slots', (counts.videos * mean(TYPICAL_SECONDS.video)) / limits.maxVideosInFlight],
  ];
  const [busyBound, busy] = bounds.reduce((a, b) => (b[1] > a[1] ? b : a));
  const tail = counts.videos > 0 ? mean(TYPICAL_SECONDS.video) : mean(TYPICAL_SECONDS.image);
  // Items that wait for others cannot start earlier than their chain allows, however free the slots.
  const chain = counts.chainSeconds ?? 0;
  const limitedBy: Bound = chain > busy + tail ? 'dependency chain' : busyBound;
  const throughput = Math.max(busy + tail, chain);
  const keyDays = counts.keyDays ?? Math.max(1, Math.ceil(counts.credits / limits.dailyCap));
  if (keyDays === 1) return { seconds: throughput, limitedBy, keyDays };
  // The last day's share of the work; at least a day's worth of it when the plan needs more days than credits/cap.
  const lastDayShare = Math.max(counts.credits - (keyDays - 1) * limits.dailyCap, 0) / counts.credits;
  const capped = (keyDays - 1) * DAY_SECONDS + throughput * lastDayShare;
  return capped > throughput
    ? { seconds: capped, limitedBy: 'daily cap', keyDays }
    : { seconds: throughput, limitedBy, keyDays };
}

export function formatDuration(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 90) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} days ${hours % 24} h`;
}

/** The longest run of items that wait for one another, at typical durations. */
export function longestChainSeconds(
  items: readonly { id: string; type: 'image' | 'video'; deps: readonly string[] }[],
): number {
  const byId = new Map(items.map((i) => [i.id, i]));
  const memo = new Map<string, number>();
  const visit = (id: string, depth: number): number => {
    const known = memo.get(id);
    if (known !== undefined) return known;
    const item = byId.get(id);
    if (!item || depth > items.length) return 0; // unknown ids and cycles are validation errors, not ours
    const own = mean(TYPICAL_SECONDS[item.type]);
    let longestDep = 0;
    for (const dep of item.deps) longestDep = Math.max(longestDep, visit(dep, depth + 1));
    const seconds = own + longestDep;
    memo.set(id, seconds);
    return seconds;
  };
  let longest = 0;
  for (const item of items) if (item.deps.length > 0) longest = Math.max(longest, visit(item.id, 0));
  return longest;
}
