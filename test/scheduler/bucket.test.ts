import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Bucket, NotSentError } from '../../src/scheduler/bucket.js';

const W = 60_000;

/** A request the test answers when it likes. */
function request() {
  let answer!: () => void;
  const answered = new Promise<void>((r) => (answer = r));
  return { fn: vi.fn(() => answered), answer };
}

describe('the sliding-window bucket', () => {
  beforeEach(() => vi.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => vi.useRealTimers());

  it('sends the first window\'s requests at once, then each next one a window after an answer', async () => {
    const bucket = new Bucket({ count: 10, windowMs: W }, () => Date.now());
    const reqs = Array.from({ length: 12 }, () => request());
    const done = reqs.map((r) => bucket.run(r.fn));
    expect(reqs.filter((r) => r.fn.mock.calls.length).length).toBe(10);
    // The service may count a request until its answer: the window runs from the answer.
    await vi.advanceTimersByTimeAsync(50);
    reqs.slice(0, 10).forEach((r) => r.answer());
    await vi.advanceTimersByTimeAsync(W);
    expect(reqs[10]!.fn).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(2);
    expect(reqs[10]!.fn).toHaveBeenCalled();
    expect(reqs[11]!.fn).toHaveBeenCalled();
    reqs.slice(10).forEach((r) => r.answer());
    await Promise.all(done);
  });

  it('a request not answered yet holds its slot for as long as it takes', async () => {
    const bucket = new Bucket({ count: 1, windowMs: 1000 }, () => Date.now());
    const slow = request();
    const next = request();
    void bucket.run(slow.fn);
    const second = bucket.run(next.fn);
    await vi.advanceTimersByTimeAsync(10 * 1000);
    expect(next.fn).not.toHaveBeenCalled();
    slow.answer();
    await vi.advanceTimersByTimeAsync(1000);
    expect(next.fn).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(2);
    expect(next.fn).toHaveBeenCalled();
    next.answer();
    await second;
  });

  it('a pause (Retry-After) holds every queued request until it ends, with at most 10% jitter', async () => {
    const bucket = new Bucket({ count: 100, windowMs: W }, () => Date.now(), [], () => 1);
    bucket.pauseFor(5000);
    const reqs = Array.from({ length: 5 }, () => request());
    reqs.forEach((r) => void bucket.run(r.fn));
    await vi.advanceTimersByTimeAsync(5499);
    expect(reqs.some((r) => r.fn.mock.calls.length)).toBe(false);
    await vi.advanceTimersByTimeAsync(2);
    expect(reqs.every((r) => r.fn.mock.calls.length)).toBe(true);
    reqs.forEach((r) => r.answer());
  });

  it('an interrupt cancels requests still waiting for their turn: they are never sent', async () => {
    const bucket = new Bucket({ count: 1, windowMs: W }, () => Date.now());
    const abort = new AbortController();
    const first = request();
    const queued = request();
    void bucket.run(first.fn, abort.signal);
    const waiting = bucket.run(queued.fn, abort.signal);
    expect(bucket.waiting).toBe(1);
    abort.abort();
    await expect(waiting).rejects.toBeInstanceOf(NotSentError);
    expect(queued.fn).not.toHaveBeenCalled();
    expect(bucket.waiting).toBe(0);
    first.answer();
  });

  it('stop rejects what is queued and accepts nothing more', async () => {
    const bucket = new Bucket({ count: 1, windowMs: W }, () => Date.now());
    const first = request();
    void bucket.run(first.fn);
    const queued = bucket.run(request().fn);
    bucket.stop();
    await expect(queued).rejects.toBeInstanceOf(NotSentError);
    await expect(bucket.run(request().fn)).rejects.toBeInstanceOf(NotSentError);
    first.answer();
  });

  it('sends read back after a restart still count in the window', async () => {
    const now = Date.now();
    const bucket = new Bucket({ count: 2, windowMs: 1000 }, () => Date.now(), [now - 900, now - 100]);
    const r = request();
    void bucket.run(r.fn);
    await vi.advanceTimersByTimeAsync(100);
    expect(r.fn).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(2);
    expect(r.fn).toHaveBeenCalled();
    r.answer();
  });

  it('X-RateLimit-Remaining 0 holds the queue for a request\'s share of the window; a higher count never speeds it past its window', async () => {
    const bucket = new Bucket({ count: 2, windowMs: 1000 }, () => Date.now(), [], () => 0);
    // The service says more is left than the window allows: the window still rules.
    bucket.serviceRemaining(50);
    const reqs = Array.from({ length: 3 }, () => request());
    reqs.forEach((r) => void bucket.run(r.fn));
    expect(reqs.map((r) => r.fn.mock.calls.length)).toEqual([1, 1, 0]);
    reqs.slice(0, 2).forEach((r) => r.answer());
    // The key is used elsewhere too: nothing left. The third waits for its window and for the share (500 ms) from now.
    await vi.advanceTimersByTimeAsync(900);
    bucket.serviceRemaining(0);
    await vi.advanceTimersByTimeAsync(499);
    expect(reqs[2]!.fn).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(2);
    expect(reqs[2]!.fn).toHaveBeenCalled();
    reqs[2]!.answer();
  });
});
