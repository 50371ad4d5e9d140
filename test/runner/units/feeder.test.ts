import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RunClock } from '../../../src/scheduler/clock.js';
import { Control } from '../../../src/runner/core/control.js';
import { Feeder } from '../../../src/runner/feed/feeder.js';
import { Store } from '../../../src/store/index.js';

const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

function feederOver(items: { id: string; priority?: number; dependsOn?: string[] }[]) {
  const store = Store.open(join(mkdtempSync(join(tmpdir(), 'genbatch-feeder-')), 's.sqlite'));
  stores.push(store);
  store.itemSync.sync(
    items.map((item, seq) => ({
      id: item.id,
      seq,
      type: 'image' as const,
      model: 'm',
      contentHash: `h-${item.id}`,
      spec: '{}',
      dependsOn: item.dependsOn ?? [],
      priority: item.priority ?? 0,
    })),
    1,
    false,
  );
  const now = { t: 1_000 };
  return { store, now, feeder: new Feeder(store, new RunClock(() => now.t, 1), new Control(undefined, 10)) };
}

describe('Feeder, built alone', () => {
  it('hands out ready items higher priority first, then in manifest order, each once while held, never before its dependency', () => {
    const { feeder, store } = feederOver([
      { id: 'a' },
      { id: 'rush', priority: 5 },
      { id: 'after-a', dependsOn: ['a'] },
      { id: 'b' },
    ]);
    const order: string[] = [];
    for (let next = feeder.nextNew('image'); next; next = feeder.nextNew('image')) {
      feeder.claim(next);
      order.push(next.id);
    }
    expect(order).toEqual(['rush', 'a', 'b']);
    expect(feeder.held).toBe(3);
    // Released without moving on, an item is ready again.
    feeder.release('b');
    expect(feeder.nextNew('image')?.id).toBe('b');
    // Its dependency done, the dependent is ready.
    store.lifecycle.startAttempt('a', 1, 'k', '{}', 1, 'fp');
    store.lifecycle.recordSent('a', 1, 1, 'fp');
    store.lifecycle.recordAccepted('a', 1, 'job', 2, 0, 1);
    store.lifecycle.recordEnded('a', 1, { jobId: 'job', status: 'completed', refunded: 0, refundDay: 0 }, 2);
    store.lifecycle.downloaded('a', 3);
    feeder.release('a');
    feeder.claim(store.items.get('b')!);
    expect(feeder.nextNew('image')?.id).toBe('after-a');
  });

  it('a canary restriction hands out only its items; an item waiting for its time is due later', () => {
    const { feeder, store, now } = feederOver([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
    feeder.restrictTo(['c']);
    expect(feeder.nextNew('image')?.id).toBe('c');
    feeder.restrictTo(undefined);
    store.lifecycle.requeue('a', now.t, now.t + 5_000);
    expect(feeder.nextNew('image')?.id).toBe('b');
    expect(feeder.nextDue('image')).toBe(now.t + 5_000);
  });
});
