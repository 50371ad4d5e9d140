import type { ItemState, Store } from './index.js';

/** What the items of one state wait for: `status --json` and the run's watchdog say it alike. */
export interface Waiting {
  state: ItemState;
  items: number;
  for: string;
  /** When the earliest of them acts (a backoff's end, a resend's time, the daily cap's reset). */
  until?: string;
}

/** What the run as a whole waits for, where a run holds the state. */
export interface RunWaits {
  running: boolean;
  /** Submissions wait for the daily cap until then. */
  waitingUntil?: number | null | undefined;
  /** The service has answered nothing since then. */
  unreachableSince?: number | null | undefined;
  /** Paused from another shell since then (a run holding the state or not). */
  pausedSince?: number | null | undefined;
  /** Downloads silent inside their body, since when the oldest moved no byte, and after how long each is abandoned. */
  stalled?: { count: number; since: number; idleTimeoutMs: number | null } | null | undefined;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** What a run's wait says, when one explains every item of a state. */
interface RunWaitsSaid {
  running: boolean;
  unreachable: string | undefined;
  cap: number | undefined;
  paused: string | undefined;
  /** What a download waits for while some are silent. */
  download: string;
}

/** Why each open item is not done yet, by state: every wait has a reason and, where it is a matter of time, a time. */
export function waitingFor(store: Store, now: number, run: RunWaits): Waiting[] {
  const out: Waiting[] = [];
  const said: RunWaitsSaid = {
    running: run.running,
    // Since when is run.unreachableSince's to say.
    unreachable:
      run.running && run.unreachableSince
        ? 'the service to answer again (it is probed; the run exits 4 past --unreachable-minutes)'
        : undefined,
    cap: run.running && run.waitingUntil && run.waitingUntil > now ? run.waitingUntil : undefined,
    paused: run.pausedSince ? `genbatch resume (paused since ${iso(run.pausedSince)}: nothing new is sent)` : undefined,
    download: run.running && run.stalled ? `its download (${stalledWords(run.stalled)})` : 'its download',
  };
  const add = (state: ItemState, items: number, what: string, until?: number | null) => {
    if (items > 0) out.push({ state, items, for: what, ...(until ? { until: iso(until) } : {}) });
  };
  for (const row of store.itemReports.waitsByState(now)) addWaits(row, said, add);
  return out;
}

function stalledWords(stalled: NonNullable<RunWaits['stalled']>): string {
  const after = stalled.idleTimeoutMs ? `after ${stalled.idleTimeoutMs / 1000} s` : 'after the idle timeout';
  return `${stalled.count} stalled: no byte since ${iso(stalled.since)}; each is abandoned and tried again ${after}`;
}

function addWaits(
  { state, n, later, next_at }: { state: ItemState; n: number; later: number; next_at: number | null },
  run: RunWaitsSaid,
  add: (state: ItemState, items: number, what: string, until?: number | null) => void,
): void {
  const { unreachable, cap, paused } = run;
  const now_ = n - later;
  switch (state) {
    case 'pending': {
      add(state, later, 'the end of a backoff (then a submission)', next_at);
      const slot = run.running ? 'a free in-flight slot and a turn in the submission rate' : 'a run (genbatch run)';
      add(state, now_, paused ?? unreachable ?? (cap ? 'the daily credit cap to reset' : slot), cap);
      return;
    }
    case 'queued':
      add(
        state,
        n,
        run.running ? (unreachable ?? 'its turn in the submission rate (never sent yet)') : 'a run (never sent yet)',
      );
      return;
    case 'submitting': {
      add(state, later, 'its time to be resent with the same key (a backoff, or a 503)', next_at);
      const answer = unreachable ? `${unreachable}, to resend it with the same key` : 'the answer to its submission';
      add(state, now_, run.running ? answer : 'a run, which resends it with the same key');
      return;
    }
    case 'maybe_accepted':
      add(
        state,
        n,
        'a later run, which resends it with the same key (it may have been accepted, and is never paid twice)',
      );
      return;
    case 'running': {
      const poll = unreachable ? `${unreachable}, to poll its job` : 'its job to end (long-polled)';
      add(state, n, run.running ? poll : 'a run, which polls its job (paid for)');
      return;
    }
    case 'downloading':
      add(state, n, run.running ? run.download : 'a run, which downloads it (paid for)');
      return;
    case 'waiting':
      add(state, n, "a person's decision on its gates (genbatch review, or genbatch approve ID …); nothing paid yet");
      return;
    default:
      return;
  }
}
