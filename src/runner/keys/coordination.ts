import type { RunClock } from '../../scheduler/clock.js';
import type { Control } from '../core/control.js';
import type { KeyLanes } from './lanes.js';

const WEEK_MS = 7 * 86_400_000;

/**
 * With a coordinator: the leases of this process's slots and reservations
 * renewed while it runs (a process that dies lets them lapse), and the
 * blocked submissions of every process on the run's keys, for the breaker.
 */
export function keepCoordinatorLeases(
  lanes: KeyLanes,
  clock: RunClock,
  onBlocked: (blocked: number) => void,
): { stop(): void; ready: Promise<void> } | undefined {
  const coordinator = lanes.all.find((l) => l.coordinator)?.coordinator;
  if (!coordinator) return undefined;
  const fingerprints = lanes.all.map((l) => l.fingerprint);
  const tick = () => {
    coordinator.renewLeases().catch(() => {});
    return coordinator.blockedSince(fingerprints, clock.scaled(WEEK_MS)).then(onBlocked, () => {});
  };
  // The first count is known before anything is submitted: the breaker must not start from zero.
  const ready = tick();
  const timer = setInterval(tick, Math.max(50, coordinator.leaseMs / 3));
  timer.unref();
  return { stop: () => clearInterval(timer), ready };
}

/** Says when the coordinator stops or starts again answering: once each time, whichever request found out. */
export function coordinatorNotices(control: Control): (reachable: boolean, message: string) => void {
  let up = true;
  return (reachable, message) => {
    if (reachable === up) return;
    up = reachable;
    control.emit({ kind: 'notice', message });
  };
}
