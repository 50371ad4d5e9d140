import { describe, expect, it } from 'vitest';
import { EventChannel } from '../../src/library/events.js';

type E = { kind: 'n'; n: number };
const n = (i: number): E => ({ kind: 'n', n: i });

describe("run()'s events", () => {
  it('keep what came before the reader started; a reader that falls behind loses the oldest and is told how many', async () => {
    const channel = new EventChannel<E>(3);
    for (let i = 1; i <= 5; i++) channel.push(n(i));
    expect(channel.buffered).toBe(3);
    channel.close();
    const read: unknown[] = [];
    for await (const event of channel) read.push(event);
    expect(read).toEqual([{ kind: 'events-dropped', count: 2 }, n(3), n(4), n(5)]);
  });

  it('reach a waiting reader as they come, and end when the run ends', async () => {
    const channel = new EventChannel<E>(10);
    const reading = (async () => {
      const read: number[] = [];
      for await (const event of channel) if (event.kind === 'n') read.push(event.n);
      return read;
    })();
    for (let i = 1; i <= 3; i++) {
      channel.push(n(i));
      await Promise.resolve();
    }
    channel.close();
    expect(await reading).toEqual([1, 2, 3]);
  });

  it('a reader that stops early stops the buffering: nothing is kept for nobody', async () => {
    const channel = new EventChannel<E>(10);
    channel.push(n(1));
    for await (const _ of channel) break;
    for (let i = 2; i < 100; i++) channel.push(n(i));
    expect(channel.buffered).toBe(0);
    expect(() => channel[Symbol.asyncIterator]()).toThrow(/read once/);
  });
});
