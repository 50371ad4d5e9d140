import { describe, expect, it } from 'vitest';
import { Control, type RunEvent } from '../../../src/runner/core/control.js';

describe('Control, built alone', () => {
  it('a budget stop lets reserved submissions go; an interrupt also aborts polls and downloads; the first stop wins', () => {
    const events: RunEvent[] = [];
    const budget = new Control(undefined, 10);
    budget.events.on((e) => events.push(e));
    budget.stop('budget', 'spent');
    expect(budget.noNewWork.signal.aborted).toBe(false);
    expect(budget.abort.signal.aborted).toBe(false);
    budget.stop('interrupted', 'Ctrl-C');
    expect(budget.stopReason).toEqual({ kind: 'budget', message: 'spent' });
    expect(events).toEqual([{ kind: 'stopping', reason: 'spent' }]);

    const interrupted = new Control(undefined, 10);
    interrupted.stop('interrupted', 'Ctrl-C');
    expect(interrupted.noNewWork.signal.aborted).toBe(true);
    expect(interrupted.abort.signal.aborted).toBe(true);

    // A full disk stops new work, but paid jobs are still polled and recorded.
    const disk = new Control(undefined, 10);
    disk.stop('disk', 'full');
    expect(disk.noNewWork.signal.aborted).toBe(true);
    expect(disk.abort.signal.aborted).toBe(false);
  });

  it('a wait for an event ends at the wake, not at its bound; a wait with nothing to wake it ends at its bound', async () => {
    const control = new Control(undefined, 10);
    let woken = false;
    const waiting = control.waitForEvent(60_000).then(() => (woken = true));
    await Promise.resolve();
    expect(woken).toBe(false);
    control.wake();
    await waiting;
    expect(woken).toBe(true);
    // Nothing wakes this one: its bound (the floor of 250 ms of real time) ends it, and no timer is left behind.
    await control.waitForEvent(1, 300);
  });
});
