import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { exitCodeOf } from '../../../src/library/outcome.js';
import { Control, type RunEvent, type StopKind } from '../../../src/runner/core/control.js';
import { STOPS } from '../../../src/runner/core/stops.js';
import type { RunSummary } from '../../../src/runner/index.js';
import { ITEM_STATES } from '../../../src/store/index.js';

describe('Control, built alone', () => {
  it('a budget stop lets reserved submissions go; an interrupt also aborts polls and downloads, and ends the run whatever stopped it first', () => {
    const events: RunEvent[] = [];
    const budget = new Control(undefined, 10);
    budget.events.on((e) => events.push(e));
    budget.askStop('budget', 'spent');
    expect(budget.noNewWork.signal.aborted).toBe(false);
    expect(budget.abort.signal.aborted).toBe(false);
    // A second stage's reason does not replace the first.
    budget.askStop('moderation', 'too many blocked');
    expect(budget.stopReason).toEqual({ kind: 'budget', message: 'spent' });
    expect(budget.noNewWork.signal.aborted).toBe(false);
    // Ctrl-C while the budget's reserved submissions still go: they are cancelled, and the polls stop waiting.
    budget.askStop('interrupted', 'Ctrl-C');
    expect(budget.stopReason).toEqual({ kind: 'interrupted', message: 'Ctrl-C' });
    expect(budget.noNewWork.signal.aborted).toBe(true);
    expect(budget.abort.signal.aborted).toBe(true);
    budget.askStop('interrupted', 'Ctrl-C again');
    expect(events).toEqual([
      { kind: 'stopping', reason: 'spent' },
      { kind: 'stopping', reason: 'Ctrl-C' },
    ]);

    // A full disk stops new work, but paid jobs are still polled and recorded.
    const disk = new Control(undefined, 10);
    disk.askStop('disk', 'full');
    expect(disk.noNewWork.signal.aborted).toBe(true);
    expect(disk.abort.signal.aborted).toBe(false);
  });

  it('every reason to stop has its rule, and the exit code follows it', () => {
    // One item left pending: a stop that ends 3 ends so only with work left.
    const counts = {
      ...Object.fromEntries(ITEM_STATES.map((s) => [s, 0])),
      pending: 1,
      done: 1,
    } as RunSummary['counts'];
    const codes = Object.fromEntries(
      (Object.keys(STOPS) as StopKind[]).map((kind) => [
        kind,
        exitCodeOf({ counts, stop: { kind, message: '' } } as RunSummary),
      ]),
    );
    // The library's reference names every reason with the exit code it ends with.
    const reference = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8');
    for (const [kind, code] of Object.entries(codes))
      expect(reference, kind).toMatch(new RegExp(`^\\| \`${kind}\` \\|.*\\| ${code} \\|$`, 'm'));
    expect(codes).toEqual({
      interrupted: 130,
      budget: 3,
      moderation: 3,
      refused: 3,
      canary: 3,
      drained: 3,
      disk: 4,
      unreachable: 4,
      publishing: 4,
      'taken-over': 4,
      'nothing-selected': 2,
    });
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
