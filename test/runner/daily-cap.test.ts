import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Coordinator } from '../../src/coordinator/postgres.js';
import { RunClock } from '../../src/scheduler/clock.js';
import { Control } from '../../src/runner/core/control.js';
import { DailyCap } from '../../src/runner/keys/daily-cap.js';
import { Credits } from '../../src/runner/keys/credits.js';
import { SharedKeyDay } from '../../src/coordinator/shared-day.js';
import { Store } from '../../src/store/index.js';

const DAY = 86_400_000;
const stores: Store[] = [];
let store: Store | undefined;
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

function capAt(now: { t: number }, cap = 10, timeScale = 1): DailyCap {
  store = Store.open(join(mkdtempSync(join(tmpdir(), 'genbatch-cap-')), 's.sqlite'));
  stores.push(store);
  return new DailyCap(store, 'fp-a', cap, new RunClock(() => now.t, timeScale));
}

describe("a key's daily cap", () => {
  it('counts this key’s charges on its key day (and those from before keys were recorded), not another key’s', () => {
    const now = { t: 100 * DAY + 3_600_000 };
    const cap = capAt(now);
    store!.accounting.charged(100, 6, 'fp-a');
    store!.accounting.charged(100, 50, 'fp-b');
    expect(cap.blockedUntil(4, now.t)).toBe(0);
    store!.accounting.charged(100, 2, '');
    expect(cap.blockedUntil(4, now.t)).toBe(101 * DAY);
    // Reserved credits of submissions not answered yet count too.
    const release = cap.reserve(2);
    expect(cap.blockedUntil(1, now.t)).toBe(101 * DAY);
    release();
    expect(cap.blockedUntil(1, now.t)).toBe(0);
  });

  it('sends nothing in the last 2 s of a key day (it could be charged on the next), and goes on when the next begins', () => {
    const now = { t: 101 * DAY - 1_999 };
    const cap = capAt(now);
    expect(cap.dayEnding(now.t)).toBe(true);
    expect(cap.blockedUntil(1, now.t)).toBe(101 * DAY);
    now.t = 101 * DAY - 2_001;
    expect(cap.blockedUntil(1, now.t)).toBe(0);
    now.t = 101 * DAY;
    expect(cap.blockedUntil(1, now.t)).toBe(0);
  });

  it('in a scaled rehearsal, the guard is a thousandth of the scaled day, never under 50 ms', () => {
    const at600 = 86_400_000 / 600;
    const now = { t: 10 * at600 - 140 };
    expect(capAt(now, 10, 600).dayEnding(now.t)).toBe(true);
    now.t = 10 * at600 - 150;
    expect(capAt(now, 10, 600).dayEnding(now.t)).toBe(false);
    const at43200 = 86_400_000 / 43_200;
    now.t = 10 * at43200 - 49;
    expect(capAt(now, 10, 43_200).dayEnding(now.t)).toBe(true);
  });

  it('with other processes on the key: a day that ends while the database reserves gives that room back and reserves on the new day', async () => {
    const now = { t: 101 * DAY - 60_000 };
    const reserved: { day: number; id: string }[] = [];
    const settled: { id: string; day: number; charged: number }[] = [];
    // The database answers slowly: the key day ends during the first reservation.
    const shared = {
      async reserveCredits(_fp: string, day: number) {
        const id = `r${reserved.length}`;
        reserved.push({ day, id });
        if (reserved.length === 1) now.t = 101 * DAY + 10;
        return id;
      },
      async settleCredits(id: string, _fp: string, day: number, charged: number) {
        settled.push({ id, day, charged });
      },
    } as unknown as Coordinator;
    const clock = new RunClock(() => now.t, 1);
    const state = Store.open(join(mkdtempSync(join(tmpdir(), 'genbatch-cap-')), 's.sqlite'));
    stores.push(state);
    const room = new SharedKeyDay(
      shared,
      'fp-a',
      10,
      () => {},
      async () => {},
    );
    const cap = new DailyCap(state, 'fp-a', 10, clock, room);
    const credits = new Credits(state, clock, new Control(undefined, 10), {}, () => [cap]);
    const reservation = credits.forAttempt({ id: 'a', model: 'studio-xl', spec: '{}' } as never, cap, 2, true);
    expect(await reservation.reserve()).toBe('reserved');
    expect(reserved).toEqual([
      { day: 100, id: 'r0' },
      { day: 101, id: 'r1' },
    ]);
    // The old day's reservation went back unused; the one the submission holds is the new day's.
    expect(settled).toEqual([{ id: 'r0', day: 100, charged: 0 }]);
  });
});
