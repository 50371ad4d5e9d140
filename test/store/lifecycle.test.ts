import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/index.js';

let store: Store | undefined;
afterEach(() => store?.close());

function fresh(): Store {
  store = Store.open(join(mkdtempSync(join(tmpdir(), 'genbatch-life-')), 's.sqlite'));
  store.itemSync.sync(
    [{ id: 'a', seq: 0, type: 'image', model: 'm', contentHash: 'h', spec: '{}', dependsOn: [] }],
    1,
    false,
  );
  return store;
}

const state = (s: Store) => s.items.get('a')!.state;

describe("the item's transitions are guarded by the states they leave", () => {
  it('walks the happy path: pending → queued → submitting → running → downloading → done', () => {
    const s = fresh();
    expect(s.lifecycle.startAttempt('a', 1, 'k1', '{}', 2, 'fp-a')).toBe(true);
    expect(state(s)).toBe('queued');
    expect(s.lifecycle.recordSent('a', 1, 3, 'fp-a')).toBe(true);
    expect(state(s)).toBe('submitting');
    expect(s.lifecycle.recordAccepted('a', 1, 'job_1', 8, 0, 4)).toBe(true);
    expect(state(s)).toBe('running');
    expect(s.lifecycle.recordEnded('a', 1, { jobId: 'job_1', status: 'completed', refunded: 0, refundDay: 0 }, 5)).toBe(
      true,
    );
    expect(state(s)).toBe('downloading');
    expect(s.lifecycle.downloaded('a', 6)).toBe(true);
    expect(state(s)).toBe('done');
  });

  it('--redo-changed and retry move items only through their guarded transitions; upload failures count in the state', () => {
    const s = fresh();
    s.lifecycle.startAttempt('a', 1, 'k1', '{}', 2, 'fp-a');
    s.lifecycle.recordSent('a', 1, 3, 'fp-a');
    s.lifecycle.recordAccepted('a', 1, 'job_1', 8, 0, 4);
    // A job in flight may be paid for: neither redo nor retry takes it back.
    expect(s.lifecycle.redoChanged('a', 5)).toBe(false);
    expect(s.lifecycle.putBack('a', 'pending', 5)).toBe(false);
    expect(state(s)).toBe('running');
    s.lifecycle.recordEnded('a', 1, { jobId: 'job_1', status: 'failed', refunded: 8, refundDay: 0 }, 6);
    s.lifecycle.endWithoutOutput('a', 'failed', { code: 'F', message: 'm' }, 7);
    expect(s.lifecycle.putBack('a', 'pending', 8)).toBe(true);
    expect(state(s)).toBe('pending');
    expect(s.lifecycle.uploadFailed('a', 9, 100)).toBe(true);
    expect(s.lifecycle.uploadFailed('a', 10, 200)).toBe(true);
    expect(s.items.get('a')).toMatchObject({ state: 'pending', upload_failures: 2, not_before: 200 });
    expect(s.lifecycle.redoChanged('a', 11)).toBe(true);
  });

  it('a transition from the wrong state changes nothing, but money the service reports is always recorded', () => {
    const s = fresh();
    expect(s.lifecycle.downloaded('a', 2)).toBe(false);
    expect(s.lifecycle.startAttempt('a', 1, 'k1', '{}', 2, 'fp-a')).toBe(true);
    expect(s.lifecycle.startAttempt('a', 2, 'k2', '{}', 3, 'fp-a')).toBe(false); // a second attempt only from pending
    expect(s.attempts.ofItem('a')).toHaveLength(1);
    expect(s.lifecycle.endWithoutOutput('a', 'failed', { code: 'X', message: 'm' }, 4)).toBe(true);
    // A late acceptance of the same attempt: the item stays failed, the charge is on the books.
    expect(s.lifecycle.recordAccepted('a', 1, 'job_1', 8, 0, 5)).toBe(false);
    expect(state(s)).toBe('failed');
    expect(s.attempts.totals()).toEqual({ charged: 8, refunded: 0 });
    expect(s.accounting.chargedOn(0)).toBe(8);
  });

  it('an attempt is bound to the key it was made for: another key may not send it, and a held one keeps its state, noted', () => {
    const s = fresh();
    s.lifecycle.startAttempt('a', 1, 'k1', '{}', 2, 'fp-a');
    // Its body may name that key's uploads: no other key sends it, even the first time.
    expect(s.lifecycle.recordSent('a', 1, 2, 'fp-b')).toBe(false);
    expect(s.lifecycle.recordSent('a', 1, 2, 'fp-a')).toBe(true);
    expect(s.attempts.keyOf('a', 1)).toBe('fp-a');
    expect(s.lifecycle.recordMaybeAccepted('a', 1, { code: 'ECONNRESET', message: 'no answer' }, 3)).toBe(true);
    expect(s.lifecycle.recordSent('a', 1, 4, 'fp-b')).toBe(false);
    expect(s.items.get('a')!.state).toBe('maybe_accepted');
    expect(s.accounting.submissionsSince(0, 'fp-a')).toHaveLength(1);
    expect(s.accounting.submissionsSince(0, 'fp-b')).toHaveLength(0);
    expect(s.lifecycle.heldForKey('a', 1, 'maybe_accepted', { code: 'KEY_MISSING', message: 'wait for fp-a' }, 5)).toBe(
      true,
    );
    expect(s.items.get('a')).toMatchObject({ state: 'maybe_accepted', error_code: 'KEY_MISSING' });
    expect(s.lifecycle.recordSent('a', 1, 6, 'fp-a')).toBe(true);
    expect(s.attempts.keyOf('a', 1)).toBe('fp-a');
  });

  it('a maybe-accepted submission keeps its reason until resent; a key conflict on the resend ends it failed and marks the attempt', () => {
    const s = fresh();
    s.lifecycle.startAttempt('a', 1, 'k1', '{}', 2, 'fp-a');
    s.lifecycle.recordSent('a', 1, 2, 'fp-a');
    expect(s.lifecycle.recordMaybeAccepted('a', 1, { code: 'ECONNRESET', message: 'no answer' }, 3)).toBe(true);
    expect(s.items.get('a')).toMatchObject({ state: 'maybe_accepted', error_code: 'ECONNRESET' });
    expect(s.lifecycle.recordSent('a', 1, 3, 'fp-a')).toBe(true);
    expect(s.lifecycle.recordConflict('a', 1, { code: 'IDEMPOTENCY_KEY_REUSED', message: 'm' }, 4)).toBe(true);
    expect(s.items.get('a')).toMatchObject({ state: 'failed', error_code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(s.attempts.latest('a')!.status).toBe('conflict');
    expect(s.items.putBack({ now: 5 })).toEqual({ requeued: 0, conflicts: ['a'] });
    expect(s.items.putBack({ ids: ['a'], now: 6 })).toEqual({ requeued: 1, conflicts: [] });
    expect(state(s)).toBe('pending');
  });

  it('a deferred resend waits for its time without a task, is counted, and a hold for a later run starts the count again', () => {
    const s = fresh();
    s.lifecycle.startAttempt('a', 1, 'k1', '{}', 2, 'fp-a');
    s.lifecycle.recordSent('a', 1, 2, 'fp-a');
    expect(s.lifecycle.deferResend('a', 1, 100, 3)).toBe(true);
    expect(s.items.get('a')).toMatchObject({ state: 'submitting', not_before: 100 });
    expect(s.queue.dueResends('image', 99, 10)).toEqual([]);
    expect(s.queue.nextDue('image')).toBe(100);
    expect(s.queue.dueResends('image', 100, 10).map((i) => i.id)).toEqual(['a']);
    s.lifecycle.deferResend('a', 1, 200, 101);
    expect(s.attempts.latest('a')!.resends).toBe(2);
    // Held: no time set, so this run's feeder leaves it to the next run.
    s.lifecycle.recordMaybeAccepted('a', 1, { code: 'ECONNRESET', message: 'no answer' }, 300);
    expect(s.items.get('a')).toMatchObject({ state: 'maybe_accepted', not_before: 0 });
    expect(s.queue.dueResends('image', 1_000, 10)).toEqual([]);
    expect(s.attempts.latest('a')!.resends).toBe(0);
    // Only a resend (the same key) takes it on: never a new attempt.
    expect(s.lifecycle.startAttempt('a', 2, 'k2', '{}', 350, 'fp-a')).toBe(false);
    expect(s.lifecycle.recordSent('a', 1, 390, 'fp-a')).toBe(true);
    expect(s.lifecycle.recordAccepted('a', 1, 'job_1', 8, 0, 400)).toBe(true);
    expect(s.items.get('a')).toMatchObject({ state: 'running', not_before: 0 });
    expect(s.lifecycle.deferResend('a', 1, 500, 401)).toBe(false);
  });

  it('a queued attempt was never sent: it is put back as it is, and an item that moved on sends nothing', () => {
    const s = fresh();
    s.lifecycle.startAttempt('a', 1, 'k1', '{}', 2, 'fp-a');
    expect(s.lifecycle.endWithoutOutput('a', 'failed', { code: 'X', message: 'm' }, 3)).toBe(true);
    expect(s.lifecycle.recordSent('a', 1, 4, 'fp-a')).toBe(false);
    expect(s.attempts.latest('a')!.status).toBe('created');
    expect(s.items.putBack({ now: 5 })).toEqual({ requeued: 1, conflicts: [] });
    expect(state(s)).toBe('queued');
  });
});

describe('what is flushed to the disk before a request may charge', () => {
  it("the send commits with synchronous = FULL, flushing the attempt's key committed before it; what an answer said commits relaxed, and the connection goes back to FULL", () => {
    const s = fresh();
    const level = () => s.db.pragma('synchronous', { simple: true }) as number;
    const seen: Record<string, number> = {};
    const spy = <K extends 'create' | 'markSent' | 'markAccepted' | 'markEnded'>(name: K) => {
      const original = s.attempts[name].bind(s.attempts) as (...a: unknown[]) => unknown;
      (s.attempts as unknown as Record<string, unknown>)[name] = (...a: unknown[]) => {
        seen[name] = level();
        return original(...a);
      };
    };
    for (const name of ['create', 'markSent', 'markAccepted', 'markEnded'] as const) spy(name);
    const FULL = 2;
    const NORMAL = 1;
    expect(level()).toBe(FULL);
    s.lifecycle.startAttempt('a', 1, 'k1', '{}', 2, 'fp-a');
    expect(level()).toBe(FULL);
    s.lifecycle.recordSent('a', 1, 3, 'fp-a');
    s.lifecycle.recordAccepted('a', 1, 'job_1', 8, 0, 4);
    expect(level()).toBe(FULL);
    s.lifecycle.recordEnded('a', 1, { jobId: 'job_1', status: 'completed', refunded: 0, refundDay: 0 }, 5);
    s.outputFiles.claimPath('job_1', 1, 'a', 'a-1.png', 1, 6);
    expect(level()).toBe(FULL);
    // WAL is flushed in order: the send's fsync carries the key's commit with it, before the request may leave.
    expect(seen).toEqual({ create: NORMAL, markSent: FULL, markAccepted: NORMAL, markEnded: NORMAL });
  });
});
