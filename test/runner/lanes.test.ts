import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/index.js';
import { RunClock } from '../../src/scheduler/clock.js';
import { KeyLane, KeyLanes } from '../../src/runner/keys/lanes.js';
import { DEFAULT_KEY_LIMITS } from '../../src/scheduler/limits.js';
import { Store } from '../../src/store/index.js';
import { EventBus } from '../../src/util/event-bus.js';

const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

function laneFor(fingerprint: string, store: Store, now: () => number): KeyLane {
  const client = { answers: new EventBus() } as unknown as ApiClient;
  const limits = { ...DEFAULT_KEY_LIMITS, submit: { count: 2, windowMs: 1000 } };
  return new KeyLane({ fingerprint, client, limits }, store, new RunClock(now, 1), new AbortController().signal, 10);
}

describe('which key a new item goes to', () => {
  it('the key whose window lets a submission leave first, even when it is busier; the least busy among equals', async () => {
    const store = Store.open(join(mkdtempSync(join(tmpdir(), 'genbatch-lanes-')), 's.sqlite'));
    stores.push(store);
    let t = 1_000_000;
    const now = () => t;
    const [full, open] = [laneFor('aaaaaaaaaaaa', store, now), laneFor('bbbbbbbbbbbb', store, now)];
    const lanes = new KeyLanes([full, open]);
    // `full` sent its window's two submissions, answered: nothing leaves it for a second. Its slots are free (those jobs ended).
    await Promise.all([full.windows.submit.run(async () => {}), full.windows.submit.run(async () => {})]);
    // `open` has one job running and room in its window.
    let endJob!: () => void;
    void open.slots.image.start(() => new Promise<void>((resolve) => (endJob = resolve)));
    expect(open.busy).toBe(1);
    expect(lanes.forNew('image', lanes.withRoomFor('image'), 0, now())?.fingerprint).toBe('bbbbbbbbbbbb');
    // A window later both could send at once: the less busy one takes it.
    t += 1001 + 1;
    expect(lanes.forNew('image', lanes.withRoomFor('image'), 0, now())?.fingerprint).toBe('aaaaaaaaaaaa');
    endJob();
  });
});
