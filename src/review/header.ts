import { RunClock } from '../scheduler/clock.js';
import type { ReviewSummaryData } from '../browser/data.js';
import { liveEta } from '../report/status.js';
import { DEFAULT_KEY_LIMITS, type KeyLimits } from '../scheduler/limits.js';
import { lockHolder, type ItemState, type Store } from '../store/index.js';

/** What the live view's header shows (the page reads it as ReviewSummaryData). */
export type ReviewSummary = ReviewSummaryData;

export function reviewSummary(
  store: Store,
  where: { title: string; statePath: string; budget: number | null },
  now: number,
): ReviewSummary {
  const counts = store.itemReports.counts();
  const states: Partial<Record<ItemState, number>> = {};
  for (const [state, n] of Object.entries(counts) as [ItemState, number][]) if (n > 0) states[state] = n;
  const { charged, refunded } = store.attempts.totals();
  const last = store.runs.all().at(-1);
  const limits = last ? (JSON.parse(last.limits) as KeyLimits) : DEFAULT_KEY_LIMITS;
  const timeScale = last?.time_scale ?? 1;
  const running = Boolean(last && last.ended_at === null && lockHolder(where.statePath)?.alive);
  const asked = store.steering.request();
  const eta = running ? liveEta(store, now) : null;
  return {
    title: where.title,
    items: Object.values(counts).reduce((a, b) => a + b, 0),
    states,
    review: store.reviews.counts(),
    credits: { charged, refunded, net: charged - refunded, budget: where.budget },
    today: {
      charged: store.accounting.chargedOn(new RunClock(Date.now, timeScale).dayOf(now)),
      dailyCap: limits.dailyCap,
    },
    pace: {
      sent: store.reviewQueries.sentSince(now - limits.submit.windowMs),
      limit: limits.submit.count,
      windowMs: limits.submit.windowMs,
      timeScale,
    },
    inFlight: counts.submitting + counts.running,
    run: { running, pausedSince: asked?.mode === 'paused' ? asked.since : null },
    eta: eta ? { seconds: eta.seconds, at: eta.at } : null,
    models: store.reviewQueries.models(),
    tags: store.reviewQueries.tags(),
  };
}
