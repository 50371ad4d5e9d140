import { setMaxListeners } from 'node:events';
import type { ApiClient } from '../../api/index.js';
import type { AcceptedKey } from '../../api/pool-setup.js';
import type { Coordinator } from '../../coordinator/postgres.js';
import { SharedWindow } from '../../coordinator/shared-window.js';
import { SharedKeyDay } from '../../coordinator/shared-day.js';
import { holdSharedSlot } from '../../coordinator/shared-slots.js';
import { RateWindow } from '../../scheduler/rate-window.js';
import type { Pacer } from '../../scheduler/pacer.js';
import type { KeyLimits } from '../../scheduler/limits.js';
import { Slots } from '../../scheduler/slots.js';
import type { AttemptRow, Store } from '../../store/index.js';
import type { RunClock } from '../../scheduler/clock.js';
import type { Control } from '../core/control.js';
import { sleep } from '../../util/sleep.js';
import { DailyCap } from './daily-cap.js';

export type JobType = 'image' | 'video';

/** One API key as the run gets it. */
export interface RunKey extends AcceptedKey {
  /** Shares the key's limits with every process using the same database; without, this process assumes it is the key's only user. */
  coordinator?: Coordinator | undefined;
}

/**
 * One API key of the run with everything that is the key's own: its rate windows,
 * in-flight slots, daily cap and uploads. An attempt belongs to one lane for
 * good: its resends, polls and uploads never go with another key.
 */
export class KeyLane {
  readonly fingerprint: string;
  readonly client: ApiClient;
  readonly limits: KeyLimits;
  readonly windows: { submit: Pacer; read: Pacer; upload: Pacer };
  readonly coordinator: Coordinator | undefined;
  readonly slots: Record<JobType, Slots>;
  readonly cap: DailyCap;
  /** Uploads under way with this key, shared by items with the same input. */
  readonly uploadsInFlight = new Map<string, Promise<string>>();
  /** Aborted when the key leaves the run or the run takes no new work: its queued submissions and upload grants are never sent. */
  readonly noNewWork: AbortSignal;
  private readonly leaving = new AbortController();
  private readonly stopHearing: () => void;
  private readonly scopes: readonly JobType[] | undefined;
  /** Why the service refused the key, once it did. */
  refused: { code: string; message: string } | undefined;

  constructor(
    key: RunKey,
    store: Store,
    clock: RunClock,
    runNoNewWork: AbortSignal,
    listeners: number,
    /** Says when the coordinator stops (false) or starts again (true) answering. */
    private readonly onCoordinator: (reachable: boolean, message: string) => void = () => {},
  ) {
    this.fingerprint = key.fingerprint;
    this.client = key.client;
    this.limits = key.limits;
    this.scopes = key.scopes;
    this.coordinator = key.coordinator;
    this.noNewWork = AbortSignal.any([runNoNewWork, this.leaving.signal]);
    setMaxListeners(listeners, this.noNewWork);
    const now = clock.now;
    const { coordinator } = key;
    if (coordinator) {
      const shared = (kind: 'submit' | 'read' | 'upload') =>
        new SharedWindow(coordinator, key.fingerprint, kind, key.limits[kind], onCoordinator);
      this.windows = { submit: shared('submit'), read: shared('read'), upload: shared('upload') };
    } else {
      const recent = recentSubmissions(store, key.fingerprint, key.limits.submit, now());
      this.windows = {
        submit: new RateWindow(key.limits.submit, now, recent),
        read: new RateWindow(key.limits.read, now),
        upload: new RateWindow(key.limits.upload, now),
      };
    }
    // What the service says is left of a limit paces this key's window; heard until the lane stops.
    this.stopHearing = key.client.answers.on((answer) => {
      if (answer.remaining !== undefined) this.windows[answer.limit].serviceRemaining(answer.remaining);
    });
    this.slots = { image: new Slots(key.limits.maxImagesInFlight), video: new Slots(key.limits.maxVideosInFlight) };
    const sharedDay = coordinator
      ? new SharedKeyDay(coordinator, key.fingerprint, key.limits.dailyCap, onCoordinator, (ms) => sleep(ms))
      : undefined;
    this.cap = new DailyCap(store, key.fingerprint, key.limits.dailyCap, clock, sharedDay);
  }

  /**
   * With a coordinator, one of the key's in-flight slots shared by every
   * process, held until the release it gives (the job ended); without, this
   * process's own slots are the key's. Undefined when the run stops first.
   */
  async holdSharedSlot(
    type: JobType,
    item: string,
    jobRunning: boolean,
    signal: AbortSignal,
  ): Promise<(() => void) | undefined> {
    if (!this.coordinator) return () => {};
    const cap = type === 'image' ? this.limits.maxImagesInFlight : this.limits.maxVideosInFlight;
    return holdSharedSlot(
      this.coordinator,
      { keyFp: this.fingerprint, type, cap, item, force: jobRunning },
      signal,
      (message) => this.onCoordinator(false, message),
    );
  }

  get active(): boolean {
    return this.refused === undefined;
  }

  serves(type: JobType): boolean {
    return this.active && (this.scopes === undefined || this.scopes.includes(type));
  }

  hasRoomFor(type: JobType): boolean {
    return this.serves(type) && this.slots[type].free;
  }

  get busy(): number {
    return this.slots.image.busy + this.slots.video.busy;
  }

  /**
   * The service refused the key: it takes no new work. What waits for its
   * submit or upload window is never sent; its paid jobs are left for a run
   * in which the key works again. False when it had already left.
   */
  leave(code: string, message: string): boolean {
    if (this.refused) return false;
    this.refused = { code, message };
    this.leaving.abort(new Error(message));
    this.windows.submit.stop();
    this.windows.upload.stop();
    return true;
  }

  stop(): void {
    for (const window of Object.values(this.windows)) window.stop();
    this.slots.image.stop();
    this.slots.video.stop();
    this.stopHearing();
  }
}

/**
 * A killed run's last sends may reach the service this long after their
 * record was committed: with 100 ms, a loaded 2-core machine saw two 429s
 * in 40 submissions killed 8 times at 60x (once in four suites). At the real
 * pace the share of the window (6 s, capped at 2 s) rules.
 */
const MIN_SEND_MARGIN_MS = 300;

/**
 * The key's submissions of the last window, read back after a restart, as
 * the window must count them. A send's time is taken before its record is
 * committed, and the service counts the request when it arrives: a few
 * milliseconds later, and later still for one a killed run never saw
 * answered. Counted as answered a share of the window after it was sent
 * (MIN_SEND_MARGIN_MS of real time at the least, however scaled the window;
 * 2 s at the most), they leave the window after the service's count does:
 * a restart sends into no 429.
 */
function recentSubmissions(
  store: Store,
  keyFp: string,
  rate: { count: number; windowMs: number },
  now: number,
): number[] {
  const margin = Math.min(2_000, Math.max(MIN_SEND_MARGIN_MS, rate.windowMs / rate.count));
  return store.accounting.submissionsSince(now - rate.windowMs - margin, keyFp).map((at) => at + margin);
}

/** The run's keys. With one key, one lane: the run is what it always was. */
export class KeyLanes {
  readonly all: readonly KeyLane[];
  private readonly byFingerprint: Map<string, KeyLane>;

  constructor(lanes: KeyLane[]) {
    this.all = lanes;
    this.byFingerprint = new Map(lanes.map((l) => [l.fingerprint, l]));
  }

  get(fingerprint: string | null | undefined): KeyLane | undefined {
    return fingerprint ? this.byFingerprint.get(fingerprint) : undefined;
  }

  get active(): KeyLane[] {
    return this.all.filter((l) => l.active);
  }

  serving(type: JobType): KeyLane[] {
    return this.all.filter((l) => l.serves(type));
  }

  withRoomFor(type: JobType): KeyLane[] {
    return this.all.filter((l) => l.hasRoomFor(type));
  }

  /**
   * The lane a new item of `type` costing `credits` goes to: among those with
   * a free slot, one whose daily cap has room, the one whose submission would
   * leave soonest (by its window, not by how many wait for it), then the least busy.
   * Undefined while every key with a free slot waits for its cap but a busy
   * one does not: the item waits for that one's slot. When every key waits,
   * one of them takes it, and the run waits for the cap.
   */
  forNew(type: JobType, withRoom: readonly KeyLane[], credits: number, now: number): KeyLane | undefined {
    const open = withRoom.filter((l) => !l.cap.isWaiting(now, credits));
    if (open.length > 0) return leastLoaded(open, now);
    if (this.serving(type).some((l) => !l.cap.isWaiting(now, credits))) return undefined;
    return leastLoaded(withRoom, now);
  }

  idle(): boolean {
    return this.all.every((l) => l.busy === 0);
  }

  stop(): void {
    for (const lane of this.all) lane.stop();
  }
}

/** The lane whose submission would leave first (by its window where this process knows it, else by how many wait for it), then the least busy. */
function leastLoaded(lanes: readonly KeyLane[], now: number): KeyLane | undefined {
  let best: KeyLane | undefined;
  let bestLeaves = Infinity;
  let bestBusy = Infinity;
  for (const lane of lanes) {
    const submit = lane.windows.submit;
    const leaves = submit.leavesAt ? submit.leavesAt(now) : now + submit.waiting * lane.limits.submit.windowMs;
    if (leaves < bestLeaves || (leaves === bestLeaves && lane.busy < bestBusy))
      [best, bestLeaves, bestBusy] = [lane, leaves, lane.busy];
  }
  return best;
}

/**
 * How long a job the service may be running without this run knowing it
 * (a submission held "maybe accepted") is counted in flight: twice the
 * spec's longest typical duration (images 10 to 90 s, videos 1 to 10 min),
 * after which any such job has ended.
 */
const MAYBE_RUNNING_MS: Record<JobType, number> = { image: 180_000, video: 1_200_000 };

/**
 * A submission that may have made a job, and no answer said which: the item
 * is held `maybe_accepted` with why (a later run resends the same key and
 * body; `retry` never replaces it), said as its end, and a slot of its key
 * counts the job the service may be running. False when the item had
 * moved on meanwhile.
 */
export function holdMaybeAccepted(
  run: { store: Store; control: Pick<Control, 'emit'>; clock: Pick<RunClock, 'now' | 'scaled'> },
  lane: KeyLane | undefined,
  item: { id: string; attempt: number; type: JobType },
  why: { code: string; message: string },
): boolean {
  if (!run.store.lifecycle.recordMaybeAccepted(item.id, item.attempt, why, run.clock.now())) return false;
  run.control.emit({ kind: 'item-final', itemId: item.id, state: 'maybe_accepted', ...why });
  lane?.slots[item.type].holdFor(run.clock.scaled(MAYBE_RUNNING_MS[item.type]));
  return true;
}

/** Why an item waits for a key the service refused: it was sent with it, and may have been accepted then. */
export function keyRefusedNote(lane: KeyLane, attempt: Pick<AttemptRow, 'n'>): { code: string; message: string } {
  return {
    code: 'KEY_REFUSED',
    message: `attempt ${attempt.n} was sent with the API key whose fingerprint is ${lane.fingerprint}, which the service then refused (${lane.refused?.code ?? 'refused'}); it may have been accepted, so it is neither resent nor read with another key (that could pay twice). Run the same command again once that key works (genbatch reconcile shows what it was charged)`,
  };
}
