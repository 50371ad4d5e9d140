import { RunClock } from '../scheduler/clock.js';
import type { KeyLimits } from '../scheduler/limits.js';
import { estimateDuration } from './duration.js';

/** Completions needed before their pace is trusted over the limits. */
const MIN_OBSERVED = 3;

export interface EtaInput {
  now: number;
  /** The live run: when it started, the limits it paces to (windows already time-scaled), its time scale. */
  run: { startedAt: number; limits: KeyLimits; timeScale: number; waitingUntil?: number | undefined };
  /** Items not final yet, per type. */
  open: { images: number; videos: number };
  /** Items that reached a final state during this run: how many, the first and last time. */
  finished: { n: number; first: number | null; last: number | null };
  /** Credits the items not yet sent will cost (an estimate), and those already charged on today's key day. */
  credits: { toSpend: number; chargedToday: number };
}

export interface Eta {
  seconds: number;
  at: number;
  /** `observed`: this run's own pace; `limits`: the key's limits at typical job durations, before enough items finished. */
  basis: 'observed' | 'limits';
}

/**
 * When a run under way should finish: its observed pace once a few items have
 * finished, the limits before that; never before the daily cap lets the last
 * credits be spent, nor before a current wait for the cap ends.
 */
export function estimateEta(input: EtaInput): Eta {
  const { now, run, open, finished } = input;
  // The run's time, as it recorded its scale.
  const clock = new RunClock(() => now, run.timeScale);
  const remaining = open.images + open.videos;
  const waitMs = Math.max(0, (run.waitingUntil ?? 0) - now);
  let workMs: number;
  let basis: Eta['basis'];
  if (
    finished.n >= MIN_OBSERVED &&
    finished.first !== null &&
    finished.last !== null &&
    finished.last > finished.first
  ) {
    const perItemMs = (finished.last - finished.first) / (finished.n - 1);
    workMs = remaining * perItemMs;
    basis = 'observed';
  } else {
    // The limits as the key has them (in the service's time), at the spec's typical durations; then in the run's.
    const unscale = (r: KeyLimits['submit']) => ({ count: r.count, windowMs: clock.serviceMs(r.windowMs) });
    const limits = {
      ...run.limits,
      submit: unscale(run.limits.submit),
      read: unscale(run.limits.read),
      upload: unscale(run.limits.upload),
    };
    workMs = clock.scaled(
      estimateDuration({ images: open.images, videos: open.videos, credits: 0 }, limits).seconds * 1000,
    );
    basis = 'limits';
  }
  let finishMs = now + waitMs + (remaining > 0 ? workMs : 0);
  // Credits beyond what today's cap allows wait for later key days.
  const leftToday = Math.max(0, run.limits.dailyCap - input.credits.chargedToday);
  if (input.credits.toSpend > leftToday && run.limits.dailyCap > 0) {
    const extraDays = Math.ceil((input.credits.toSpend - leftToday) / run.limits.dailyCap);
    const lastDayStart = clock.dayStart(clock.dayOf(now) + extraDays);
    const lastDayShare =
      (input.credits.toSpend - leftToday - (extraDays - 1) * run.limits.dailyCap) / Math.max(1, input.credits.toSpend);
    finishMs = Math.max(finishMs, lastDayStart + workMs * lastDayShare);
  }
  return { seconds: Math.round((finishMs - now) / 1000), at: Math.round(finishMs), basis };
}
