import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RunClock } from '../../src/runner/clock.js';
import { DailyCap } from '../../src/runner/daily-cap.js';
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
});
