import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError, type ApiClient, type Job } from '../../../src/api/index.js';
import { RunClock } from '../../../src/scheduler/clock.js';
import { Control, type RunEvent } from '../../../src/runner/core/control.js';
import { Credits } from '../../../src/runner/keys/credits.js';
import { FirstPoll } from '../../../src/runner/item/first-poll.js';
import { JobTask, type JobTaskDeps } from '../../../src/runner/item/job-task.js';
import { KeyLane } from '../../../src/runner/keys/lanes.js';
import { PauseSwitch } from '../../../src/runner/core/pause-switch.js';
import { PollWait } from '../../../src/runner/item/poll-wait.js';
import type { Reachability } from '../../../src/runner/watch/reachability.js';
import { SendBatch } from '../../../src/runner/item/send-batch.js';
import { DEFAULT_KEY_LIMITS } from '../../../src/scheduler/limits.js';
import { Store } from '../../../src/store/index.js';
import { EventBus } from '../../../src/util/event-bus.js';
import { FolderSink } from '../../../src/sink/index.js';

const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

const job = (status: string, charged = 2): Job =>
  ({ id: 'job_1', status, outputs: [], refunded: 0, charged, raw: {} }) as unknown as Job;

/** One item's task with a fake client: each submission is answered by the next of `answers`. */
function taskWith(answers: (() => Promise<Job>)[]) {
  const dir = mkdtempSync(join(tmpdir(), 'genbatch-task-'));
  const store = Store.open(join(dir, 's.sqlite'));
  stores.push(store);
  store.setMeta('run_id', 'run-1');
  const spec = { type: 'image', model: 'studio-lite', prompt: 'a mug' };
  store.itemSync.sync(
    [
      {
        id: 'a',
        seq: 0,
        type: 'image',
        model: 'studio-lite',
        contentHash: 'h',
        spec: JSON.stringify(spec),
        dependsOn: [],
      },
    ],
    1,
    false,
  );
  const keys: string[] = [];
  const client = {
    answers: new EventBus(),
    async submitImage(_body: unknown, key: string) {
      keys.push(key);
      return answers.shift()!();
    },
    async getJob() {
      return job('COMPLETED');
    },
  } as unknown as ApiClient;
  const clock = new RunClock(Date.now, 3600);
  const events: RunEvent[] = [];
  const control = new Control(undefined, 20);
  control.events.on((e) => events.push(e));
  const lane = new KeyLane(
    { fingerprint: 'fp-a', client, limits: { ...DEFAULT_KEY_LIMITS, submit: { count: 10, windowMs: 100 } } },
    store,
    clock,
    control.noNewWork.signal,
    20,
  );
  const reachability = {
    isDown: false,
    ready: async () => true,
    noAnswer: async () => 'own',
  } as unknown as Reachability;
  const completed: string[] = [];
  const pollWait = new PollWait(0);
  const deps: JobTaskDeps = {
    store,
    clock,
    control,
    reachability,
    pauseSwitch: new PauseSwitch(),
    sends: new SendBatch(store),
    pollWait,
    firstPoll: new FirstPoll(() => 0),
    session: { startedAt: Date.now() },
    settings: { outputs: new FolderSink(join(dir, 'out')), maxRetries: 2 },
    report: {
      charged() {},
      refunded() {},
      accepted() {},
      refused() {},
      blocked() {},
      otherKeyHasRoom: () => false,
      timed: (wait) => wait,
    },
  };
  const credits = new Credits(store, clock, control, { prices: { 'studio-lite': 2 } }, () => [lane.cap]);
  const item = store.items.get('a')!;
  // The job's life goes on to its download with what the task resolves to: a completed job.
  const task = () => {
    const t = new JobTask(deps, lane, store.items.get('a')!, credits.forAttempt(item, lane.cap, 2, true));
    return { run: async () => void ((await t.run()) && completed.push(t.itemId)) };
  };
  return { store, task, keys, completed, events };
}

describe('JobTask, built alone with a fake client', () => {
  it('a lost answer is resent later with the same key; the job completes and goes to download', async () => {
    const t = taskWith([
      () =>
        Promise.reject(new ApiError(502, 'BAD_GATEWAY', 'bad gateway', {}, undefined, undefined, 'POST', '/images')),
      () => Promise.resolve(job('QUEUED')),
    ]);
    await t.task().run();
    // The 502 may have made a job: the same task waits for the resend's time, its slot held, and resends its key.
    expect(t.keys).toHaveLength(2);
    expect(t.store.attempts.latest('a')).toMatchObject({ resends: 1 });
    expect(t.keys[1]).toBe(t.keys[0]);
    expect(t.completed).toEqual(['a']);
    expect(t.store.items.get('a')!.state).toBe('downloading');
    expect(t.store.attempts.totals()).toEqual({ charged: 2, refunded: 0 });
  });

  it('a content violation blocks the item for good: no resend, nothing to download', async () => {
    const t = taskWith([
      () => Promise.reject(new ApiError(422, 'CONTENT_VIOLATION', 'no', {}, undefined, undefined, 'POST', '/images')),
    ]);
    await t.task().run();
    expect(t.store.items.get('a')).toMatchObject({ state: 'blocked', error_code: 'CONTENT_VIOLATION' });
    expect(t.keys).toHaveLength(1);
    expect(t.completed).toEqual([]);
    expect(t.events).toContainEqual(expect.objectContaining({ kind: 'item-final', state: 'blocked' }));
  });
});
