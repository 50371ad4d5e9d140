import type { SteeringRequest, Store } from '../../store/index.js';
import type { Control } from '../core/control.js';
import type { PauseSwitch } from '../core/pause-switch.js';

/** How often the run reads its steering row: `pause`, `resume` and `drain` act within this (and a commit). */
const EVERY_MS = 250;

/**
 * Applies what another shell asked through the state (`genbatch pause`,
 * `resume`, `drain`), read every quarter second, and answers in the state so
 * the command can say what the run did. A run started on a paused state
 * starts paused. Stopped with the run; a drain asked of it ends with it.
 */
export function watchSteering(deps: {
  store: Store;
  pause: PauseSwitch;
  control: Control;
  now: () => number;
  /** Submissions awaiting an answer and jobs being polled now. */
  inFlight: () => number;
}): () => void {
  const { store, pause, control, now } = deps;
  let seen: SteeringRequest | undefined;
  const answer = (mode: SteeringRequest['mode'] | 'running') => {
    const counts = store.itemReports.counts();
    store.steering.answered({
      mode,
      at: now(),
      pid: process.pid,
      inFlight: deps.inFlight(),
      notSent: counts.pending + counts.queued,
    });
  };
  // A drain was asked of a run that ended (killed) before it was done: this run is not that one.
  if (store.steering.request()?.mode === 'draining') store.steering.ask(undefined, now());
  const look = () => {
    const asked = store.steering.request();
    if (asked?.mode === seen?.mode && asked?.since === seen?.since) return;
    const first = seen === undefined && asked === undefined;
    seen = asked;
    if (first) return;
    if (asked?.mode === 'paused') {
      pause.pause(asked.since);
      control.emit({ kind: 'paused', since: asked.since });
    } else if (asked?.mode === 'draining') {
      pause.resume();
      control.askStop(
        'drained',
        'drained from another shell (genbatch drain): nothing new is sent; the jobs in flight are finished and downloaded',
      );
    } else if (pause.isPaused) {
      pause.resume();
      control.emit({ kind: 'resumed' });
      control.wake();
    }
    answer(asked?.mode ?? 'running');
  };
  look();
  const timer = setInterval(look, EVERY_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    // A drain is done once its run ends: the next run runs.
    if (store.steering.request()?.mode === 'draining') store.steering.ask(undefined, now());
  };
}
