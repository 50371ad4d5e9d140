import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RateWindow, NotSentError } from '../../src/scheduler/rate-window.js';

const W = 60_000;

/** A request the test answers when it likes. */
function request() {
  let answer!: () => void;
  const answered = new Promise<void>((r) => (answer = r));
  return { fn: vi.fn(() => answered), answer };
}

describe('the sliding rate window', () => {
  beforeEach(() => vi.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => vi.useRealTimers());

  it("sends the first window's requests at once, then each next one a window after an answer", async () => {
    const window = new RateWindow({ count: 10, windowMs: W }, () => Date.now());
    const reqs = Array.from({ length: 12 }, () => request());
    const done = reqs.map((r) => window.run(r.fn));
    expect(reqs.filter((r) => r.fn.mock.calls.length).length).toBe(10);
    // The service may count a request until its answer: the window runs from the answer.
    await vi.advanceTimersByTimeAsync(50);
    for (const r of reqs.slice(0, 10)) r.answer();
    await vi.advanceTimersByTimeAsync(W);
    expect(reqs[10]!.fn).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(2);
    expect(reqs[10]!.fn).toHaveBeenCalled();
    expect(reqs[11]!.fn).toHaveBeenCalled();
    for (const r of reqs.slice(10)) r.answer();
    await Promise.all(done);
  });

  it('a window of thousands keeps its count over many windows: never more than its count within a window of an answer', async () => {
    const count = 1200;
    const window = new RateWindow({ count, windowMs: 1000 }, () => Date.now());
    const sentAt: number[] = [];
    const answeredAt: number[] = [];
    const done = Array.from({ length: 4_000 }, () =>
      window.run(async () => {
        sentAt.push(Date.now());
        await new Promise((r) => setTimeout(r, 5));
        answeredAt.push(Date.now());
      }),
    );
    await vi.advanceTimersByTimeAsync(5_000);
    await Promise.all(done);
    expect(sentAt).toHaveLength(4_000);
    // The (i + count)-th send leaves only once the i-th answer is a window old; and as soon as it is.
    for (let i = 0; i + count < sentAt.length; i++) expect(sentAt[i + count]! - answeredAt[i]!).toBeGreaterThan(1000);
    expect(sentAt.at(-1)! - sentAt[0]!).toBeLessThan(3 * 1006 + 10);
  });

  it('says when a request queued now would leave, and it leaves then', async () => {
    const t0 = Date.now();
    const window = new RateWindow({ count: 3, windowMs: 1000 }, () => Date.now());
    expect(window.leavesAt(t0)).toBe(t0);
    const sent = Array.from({ length: 3 }, () => request());
    const done = sent.map((r) => window.run(r.fn));
    // Full, and not answered yet: each counts as answered now.
    expect(window.leavesAt(t0)).toBe(t0 + 1001);
    for (const [i, r] of sent.entries()) {
      await vi.advanceTimersByTimeAsync(10);
      expect(Date.now()).toBe(t0 + 10 * (i + 1));
      r.answer();
    }
    await vi.advanceTimersByTimeAsync(0);
    const now = Date.now();
    // The first answer (at +10) leaves the window first; a request already queued takes that place, the next one the second's (+20).
    expect(window.leavesAt(now)).toBe(t0 + 10 + 1001);
    const queued = request();
    const queuedDone = window.run(queued.fn);
    expect(window.leavesAt(now)).toBe(t0 + 20 + 1001);
    await vi.advanceTimersByTimeAsync(t0 + 10 + 1001 - now - 1);
    expect(queued.fn).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(queued.fn).toHaveBeenCalled();
    queued.answer();
    // A pause moves it to the pause's end at the earliest.
    window.pauseFor(5000);
    expect(window.leavesAt(Date.now())).toBeGreaterThanOrEqual(Date.now() + 5000);
    await Promise.all([...done, queuedDone]);
  });

  it('a request not answered yet holds its slot for as long as it takes', async () => {
    const window = new RateWindow({ count: 1, windowMs: 1000 }, () => Date.now());
    const slow = request();
    const next = request();
    void window.run(slow.fn);
    const second = window.run(next.fn);
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

  it('a request that ends unsent (it found it may not leave) gives its place back at once; a sent one holds it a window', async () => {
    const window = new RateWindow({ count: 1, windowMs: W }, () => Date.now());
    // Taken back while it waited for its turn: it leaves nothing on the wire and says so.
    await window.run(async (unused) => unused());
    const next = request();
    const second = window.run(next.fn);
    await vi.advanceTimersByTimeAsync(0);
    expect(next.fn).toHaveBeenCalled();
    next.answer();
    await second;
    // Sent and answered: the next waits the window out.
    const third = request();
    const done = window.run(third.fn);
    await vi.advanceTimersByTimeAsync(W);
    expect(third.fn).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(2);
    expect(third.fn).toHaveBeenCalled();
    third.answer();
    await done;
  });

  it('a pause (Retry-After) holds every queued request until it ends, with at most 10% jitter', async () => {
    const window = new RateWindow(
      { count: 100, windowMs: W },
      () => Date.now(),
      [],
      () => 1,
    );
    window.pauseFor(5000);
    const reqs = Array.from({ length: 5 }, () => request());
    reqs.forEach((r) => void window.run(r.fn));
    await vi.advanceTimersByTimeAsync(5499);
    expect(reqs.some((r) => r.fn.mock.calls.length)).toBe(false);
    await vi.advanceTimersByTimeAsync(2);
    expect(reqs.every((r) => r.fn.mock.calls.length)).toBe(true);
    for (const r of reqs) r.answer();
  });

  it('an interrupt cancels requests still waiting for their turn: they are never sent', async () => {
    const window = new RateWindow({ count: 1, windowMs: W }, () => Date.now());
    const abort = new AbortController();
    const first = request();
    const queued = request();
    void window.run(first.fn, abort.signal);
    const waiting = window.run(queued.fn, abort.signal);
    expect(window.waiting).toBe(1);
    abort.abort();
    await expect(waiting).rejects.toBeInstanceOf(NotSentError);
    expect(queued.fn).not.toHaveBeenCalled();
    expect(window.waiting).toBe(0);
    first.answer();
  });

  it('stop rejects what is queued and accepts nothing more', async () => {
    const window = new RateWindow({ count: 1, windowMs: W }, () => Date.now());
    const first = request();
    void window.run(first.fn);
    const queued = window.run(request().fn);
    window.stop();
    await expect(queued).rejects.toBeInstanceOf(NotSentError);
    await expect(window.run(request().fn)).rejects.toBeInstanceOf(NotSentError);
    first.answer();
  });

  it('sends read back after a restart still count in the window', async () => {
    const now = Date.now();
    const window = new RateWindow({ count: 2, windowMs: 1000 }, () => Date.now(), [now - 900, now - 100]);
    const r = request();
    void window.run(r.fn);
    await vi.advanceTimersByTimeAsync(100);
    expect(r.fn).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(2);
    expect(r.fn).toHaveBeenCalled();
    r.answer();
  });

  it("X-RateLimit-Remaining 0 while this window has room (the key is used elsewhere too) holds the queue for a request's share of the window", async () => {
    const window = new RateWindow(
      { count: 3, windowMs: 900 },
      () => Date.now(),
      [],
      () => 0,
    );
    // The service says more is left than the window allows: the window still rules.
    window.serviceRemaining(50);
    const reqs = Array.from({ length: 4 }, () => request());
    reqs.forEach((r) => void window.run(r.fn));
    expect(reqs.map((r) => r.fn.mock.calls.length)).toEqual([1, 1, 1, 0]);
    for (const r of reqs.slice(0, 3)) r.answer();
    await vi.advanceTimersByTimeAsync(1000);
    // The window is empty again; the first request goes, and the service counts others we do not know of: nothing left.
    expect(reqs[3]!.fn).toHaveBeenCalled();
    window.serviceRemaining(0);
    reqs[3]!.answer();
    const next = request();
    void window.run(next.fn);
    // Two places are free by our own count, but the service has none: the share (300 ms) is waited.
    await vi.advanceTimersByTimeAsync(299);
    expect(next.fn).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(2);
    expect(next.fn).toHaveBeenCalled();
    next.answer();
  });

  it('X-RateLimit-Remaining 0 that this window already accounts for adds no wait: the next request goes as soon as the window lets it', async () => {
    const window = new RateWindow(
      { count: 2, windowMs: 1000 },
      () => Date.now(),
      [],
      () => 0,
    );
    const reqs = Array.from({ length: 3 }, () => request());
    reqs.forEach((r) => void window.run(r.fn));
    await vi.advanceTimersByTimeAsync(10);
    reqs[0]!.answer();
    await vi.advanceTimersByTimeAsync(790);
    // The second request, answered at 800 ms, fills the service's window as it fills ours: 0 left, which the window already holds to.
    window.serviceRemaining(0);
    reqs[1]!.answer();
    // The first answer (at 10 ms) leaves the window at 1011 ms: the third goes then, not a share (500 ms) after the second answer.
    await vi.advanceTimersByTimeAsync(210);
    expect(reqs[2]!.fn).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(2);
    expect(reqs[2]!.fn).toHaveBeenCalled();
    reqs[2]!.answer();
  });
});
