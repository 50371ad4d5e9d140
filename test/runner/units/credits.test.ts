import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RunClock } from '../../../src/scheduler/clock.js';
import { Control, type RunEvent } from '../../../src/runner/core/control.js';
import { Credits } from '../../../src/runner/keys/credits.js';
import { DailyCap } from '../../../src/runner/keys/daily-cap.js';
import { type ItemRow, Store } from '../../../src/store/index.js';

const DAY = 86_400_000;
const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

function setUp(opts: { budget?: number; caps?: number[]; prices?: Record<string, number> } = {}) {
  const store = Store.open(join(mkdtempSync(join(tmpdir(), 'genbatch-credits-')), 's.sqlite'));
  stores.push(store);
  const now = { t: 100 * DAY + 3_600_000 };
  const clock = new RunClock(() => now.t, 1);
  const events: RunEvent[] = [];
  const control = new Control(undefined, 10);
  control.events.on((e) => events.push(e));
  const caps = (opts.caps ?? [100]).map((cap, i) => new DailyCap(store, `fp-${i}`, cap, clock));
  const waits: (number | undefined)[] = [];
  const credits = new Credits(
    store,
    clock,
    control,
    { budget: opts.budget, prices: opts.prices ?? { small: 2, large: 8 } },
    () => caps,
    (until) => waits.push(until),
  );
  const item = (id: string, model: string) =>
    ({ id, model, type: 'image', spec: JSON.stringify({ type: 'image', model, prompt: 'p' }) }) as unknown as ItemRow;
  return { store, now, control, events, caps, credits, item, waits };
}

describe('Credits, built alone', () => {
  it('prices an attempt once, from the manifest, and counts assigned and reserved credits against the budget', async () => {
    const { credits, caps, item, control } = setUp({ budget: 20 });
    const large = item('a', 'large');
    expect(credits.priceOf(large)).toBe(8);
    const first = credits.forAttempt(large, caps[0]!, 8, true);
    const second = credits.forAttempt(item('b', 'large'), caps[0]!, 8, true);
    // 16 given out: 8 more would pass the budget of 20, 4 would not.
    expect(credits.overBudget(4)).toBe(false);
    expect(await first.reserve()).toBe('reserved');
    expect(credits.overBudget(8)).toBe(true);
    expect(control.stopReason?.kind).toBe('budget');
    // An item given out within the budget still goes once the budget stopped the run.
    expect(await second.reserve()).toBe('reserved');
    first.settle(8);
    second.release();
    first.close();
    second.close();
  });

  it('a key whose day is full waits for the next day, says so once for every key, or hands the item over', async () => {
    const { credits, caps, item, now, events, waits, store, control } = setUp({ caps: [10, 10] });
    store.accounting.charged(100, 9, 'fp-0');
    const reservation = credits.forAttempt(item('a', 'small'), caps[0]!, 2, true);
    // Another key has room: a submission never sent goes to it.
    expect(await reservation.reserve(() => true)).toBe('hand-over');
    // None has: it waits for the day's turn.
    store.accounting.charged(100, 9, 'fp-1');
    const other = credits.forAttempt(item('b', 'small'), caps[1]!, 2, true);
    const waiting = Promise.all([reservation.reserve(), other.reserve()]);
    await vi.waitFor(() => expect(credits.waitingUntil).toBe(101 * DAY));
    expect(events.filter((e) => e.kind === 'waiting')).toEqual([
      { kind: 'waiting', reason: 'the daily credit cap', untilMs: 101 * DAY },
    ]);
    expect(waits).toEqual([101 * DAY]);
    now.t = 101 * DAY + 1;
    control.wake(); // as a task's end would
    expect(await waiting).toEqual(['reserved', 'reserved']);
    expect(credits.waitingUntil).toBeUndefined();
  });

  it('a model nothing prices sends one job at a time until a charge shows its price', async () => {
    const { credits, caps, item } = setUp({ prices: {} });
    const mystery = (id: string) => item(id, 'mystery');
    expect(credits.priceOf(mystery('a'))).toBeUndefined();
    const first = credits.forAttempt(mystery('a'), caps[0]!, undefined, false);
    const second = credits.forAttempt(mystery('b'), caps[0]!, undefined, false);
    expect(await first.reserve()).toBe('reserved');
    let secondGone = false;
    const next = second.reserve().then((r) => {
      secondGone = true;
      return r;
    });
    // Its gate looks again only when woken (or after a second): a few turns of the event loop leave it waiting.
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(secondGone).toBe(false);
    credits.noteCharge('mystery', 6);
    first.settle(6);
    expect(await next).toBe('reserved');
    expect(credits.priceOf(mystery('c'))).toBe(6);
  });
});
