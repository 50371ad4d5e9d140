import type { RunClock } from '../../scheduler/clock.js';
import type { Control } from '../core/control.js';
import type { KeyLanes } from '../keys/lanes.js';
import { Reachability } from './reachability.js';

const utc = (at: number) =>
  new Date(at)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');

/**
 * The run's one watch of the service, for every key: any answer of any
 * key's client says it is there; while nothing answers, one probe (`/me`,
 * paced as a read) asks every second of the service's time (0.1 to 1 s of
 * real time). It says when the service goes and comes back, and stops the
 * run (exit 4) after `unreachableMs`.
 */
export function watchService(deps: {
  lanes: KeyLanes;
  clock: RunClock;
  control: Control;
  now: () => number;
  unreachableMs: number;
  logger?: { warn(obj: object, msg: string): void } | undefined;
  onActivity: () => void;
}): { reachability: Reachability; stopHearing: () => void } {
  const { lanes, clock, control, now, logger, onActivity } = deps;
  const probeEveryMs = Math.min(1_000, Math.max(100, clock.scaled(1_000)));
  // A request this late (half a minute of the service's time, 1 to 5 s of real time) with nothing answered since is a
  // silence worth a probe; a probe waits as long for its own answer.
  const silentMs = Math.min(5_000, Math.max(1_000, clock.scaled(30_000)));
  const reachability = new Reachability({
    now,
    probe: (signal) => {
      const lane = lanes.active[0] ?? lanes.all[0]!;
      return lane.windows.read.run(() => {
        onActivity();
        return lane.client.me(signal, silentMs);
      }, signal);
    },
    probeEveryMs,
    silentMs,
    abandonOverdue: (at, late) =>
      lanes.all.reduce((n, lane) => n + lane.client.abandonOverdue(at, late, clock.scaled), 0),
    onLost: (count) => logger?.warn({ count }, 'requests never answered while the service answered others: sent again'),
    overdueSince: (at, silent) => {
      const overdue = lanes.all
        .map((lane) => lane.client.overdueSince(at, silent, clock.scaled))
        .filter((s) => s !== undefined);
      return overdue.length ? Math.min(...overdue) : undefined;
    },
    giveUpAfterMs: deps.unreachableMs,
    signal: control.abort.signal,
    onDown: (since, reason) => {
      logger?.warn({ since, reason }, 'service unreachable');
      control.emit({ kind: 'outage', phase: 'down', since, reason });
      control.emit({
        kind: 'notice',
        message: `the service is unreachable (${reason}); submissions pause, and it is asked again every ${Math.round(probeEveryMs)} ms. Nothing paid is lost.`,
      });
    },
    onUp: (since, at) => {
      // What the outage swallowed will never be answered: given up now, sent again at once (submissions with their keys).
      const abandoned = lanes.all.reduce((n, lane) => n + lane.client.abandonSentBefore(at), 0);
      control.emit({ kind: 'outage', phase: 'up', since });
      control.emit({
        kind: 'notice',
        message: `the service answers again, after ${((now() - since) / 1000).toFixed(1)} s unreachable; submissions go on${abandoned ? ` (${abandoned} request${abandoned === 1 ? '' : 's'} it never answered sent again)` : ''}`,
      });
      control.wake();
    },
    onGiveUp: (since, reason) =>
      control.askStop(
        'unreachable',
        `the service has answered nothing since ${utc(since)} (${((now() - since) / 60_000).toFixed(1)} minutes; last: ${reason}). Nothing paid is lost: run the same command again once it is reachable, and it resends what may have been accepted with the same keys and downloads what was paid for.`,
      ),
  });
  // Any answer of any key's client says the service is there; heard until the run ends.
  const stops = lanes.all.map((lane) => lane.client.answers.on(() => reachability.answered()));
  return {
    reachability,
    stopHearing: () => {
      for (const stop of stops) stop();
      reachability.stop();
    },
  };
}
