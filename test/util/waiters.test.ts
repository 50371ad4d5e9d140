import { describe, expect, it } from 'vitest';
import { Waiters } from '../../src/util/waiters.js';

describe('waiters', () => {
  it('a release lets go those waiting then, with its value; those who come later wait for the next', async () => {
    const waiters = new Waiters<boolean>();
    const first = waiters.wait(undefined, false);
    waiters.release(true);
    const second = waiters.wait(undefined, false);
    expect(waiters.size).toBe(1);
    expect(await first).toBe(true);
    waiters.release(true);
    expect(await second).toBe(true);
    expect(waiters.size).toBe(0);
  });

  it('an abort lets its caller go at once with the early value, and forgets it', async () => {
    const waiters = new Waiters<boolean>();
    const abort = new AbortController();
    const waiting = waiters.wait(abort.signal, false);
    abort.abort();
    expect(await waiting).toBe(false);
    expect(waiters.size).toBe(0);
    expect(await waiters.wait(abort.signal, false)).toBe(false);
  });
});
