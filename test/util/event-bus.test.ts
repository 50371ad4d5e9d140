import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/util/event-bus.js';

type E = { kind: 'a'; n: number } | { kind: 'b' };

describe('EventBus', () => {
  it('tells every listener, by kind too; a listener that throws breaks neither the emitter nor the others', () => {
    const failures: unknown[] = [];
    const bus = new EventBus<E>((error) => failures.push(error));
    const first: E[] = [];
    const second: E[] = [];
    const onlyA: number[] = [];
    bus.on((e) => first.push(e));
    bus.on(() => {
      throw new Error('a listener bug');
    });
    bus.on((e) => second.push(e));
    bus.onKind('a', (e) => onlyA.push(e.n));
    bus.emit({ kind: 'a', n: 1 });
    bus.emit({ kind: 'b' });
    expect(first).toEqual([{ kind: 'a', n: 1 }, { kind: 'b' }]);
    expect(second).toEqual(first);
    expect(onlyA).toEqual([1]);
    expect(failures).toHaveLength(2);
  });

  it('stops telling a listener once it unsubscribes, and the same function subscribed twice unsubscribes alone', () => {
    const bus = new EventBus<E>();
    const heard: string[] = [];
    const listener = (e: E) => heard.push(e.kind);
    const stopFirst = bus.on(listener);
    bus.on(listener);
    bus.emit({ kind: 'b' });
    stopFirst();
    bus.emit({ kind: 'b' });
    expect(heard).toEqual(['b', 'b', 'b']);
    expect(bus.listenerCount).toBe(1);
  });
});
