import { RunClock } from '../scheduler/clock.js';
import { DEFAULT_KEY_LIMITS, type KeyLimits } from '../scheduler/limits.js';
import type { RunSeries } from '../browser/data.js';
import type { SeriesBuckets, Store } from '../store/index.js';

export type { RunSeries } from '../browser/data.js';

/** Plots with more points than this get wider buckets: a multi-day run stays a few kilobytes. */
const MAX_POINTS = 720;

/** The run's submissions, credits and jobs in flight over time, from the state alone. */
export function runSeries(store: Store, budget: number | null): RunSeries {
  const run = store.runs.all().at(-1);
  const limits = run ? (JSON.parse(run.limits) as KeyLimits) : DEFAULT_KEY_LIMITS;
  const timeScale = run?.time_scale ?? 1;
  const windowMs = limits.submit.windowMs;
  const span = store.reviewQueries.series(windowMs);
  const factor = span.first === null ? 1 : Math.max(1, Math.ceil((span.last! - span.first) / windowMs / MAX_POINTS));
  const raw = factor === 1 ? span : store.reviewQueries.series(windowMs * factor);
  return {
    ...linesOf(raw, windowMs * factor, factor, limits, timeScale),
    windowMs,
    submitLimit: limits.submit.count,
    budget,
    inFlightLimit: limits.maxImagesInFlight + limits.maxVideosInFlight,
  };
}

function linesOf(
  raw: SeriesBuckets,
  bucketMs: number,
  factor: number,
  limits: KeyLimits,
  timeScale: number,
): Pick<RunSeries, 'bucketMs' | 't' | 'submissions' | 'credits' | 'capAllowed' | 'inFlight'> {
  const empty = { bucketMs, t: [], submissions: [], credits: [], capAllowed: [], inFlight: [] };
  if (raw.first === null) return empty;
  const from = Math.floor(raw.first / bucketMs);
  const to = Math.floor(raw.last! / bucketMs);
  const at = <T extends { b: number }>(rows: T[]) => new Map(rows.map((r) => [r.b, r]));
  const sent = at(raw.sent);
  const charged = at(raw.charged);
  const refunded = at(raw.refunded);
  const ended = at(raw.ended);
  const out: ReturnType<typeof linesOf> = { ...empty, t: [] };
  const clock = new RunClock(Date.now, timeScale);
  const firstDay = clock.dayOf(raw.first);
  let credits = 0;
  let inFlight = 0;
  for (let b = from; b <= to; b++) {
    const n = sent.get(b)?.n ?? 0;
    credits += (charged.get(b)?.credits ?? 0) - (refunded.get(b)?.credits ?? 0);
    inFlight += n - (ended.get(b)?.n ?? 0);
    out.t.push((b * bucketMs) / 1000);
    out.submissions.push(n / factor);
    out.credits.push(credits);
    out.capAllowed.push((clock.dayOf((b + 1) * bucketMs - 1) - firstDay + 1) * limits.dailyCap);
    out.inFlight.push(Math.max(0, inFlight));
  }
  return out;
}
