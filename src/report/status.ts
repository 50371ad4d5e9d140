import { RunClock } from '../scheduler/clock.js';
import { estimateEta } from '../estimate/eta.js';
import type { KeyLimits } from '../scheduler/limits.js';
import { waitingFor, type RunWaits, type Waiting } from '../store/waiting.js';
import { describeService, madeAgainst } from '../store/made-against.js';
import {
  lockHolder,
  type ItemProblem,
  type ItemState,
  type PublicationCounts,
  type RunRow,
  type Store,
  type WaitingForDecisions,
} from '../store/index.js';

/** `genbatch status --json`: a stable shape (documented in the README); fields are only ever added. */
export interface Status {
  manifest: string;
  state: string;
  items: { total: number } & Record<ItemState, number>;
  credits: { charged: number; refunded: number; net: number };
  failures: Record<string, number>;
  /** Each item `failures` counts: failed, rejected, blocked, skipped, and those waiting for a later run with an error noted. */
  problems: ItemProblem[];
  /** Items a person's decision skipped (a rejected gate, or its approval timeout): never paid, no failure, with why. */
  skippedByDecision: { id: string; reason: string }[];
  /** Submissions on the wire or maybe accepted, and jobs running: never the queued ones (`items.queued`), which were not sent. */
  inFlight: number;
  /** Items of an earlier version of the manifest that it no longer has: not run, not counted in `items`. */
  removed: number;
  /**
   * Items changed after they were submitted, kept as they were: their content, or an earlier item's output they
   * were made from has a newer version (a draft made again). `run --redo-changed` makes them again.
   */
  changed: number;
  run: {
    /** A genbatch run holds this state file now. */
    running: boolean;
    /** How many times `genbatch run` worked on this state file. */
    sessions: number;
    startedAt: string | null;
    lastActiveAt: string | null;
    /** Time spent running, summed over sessions (a killed session counts up to its last heartbeat). */
    seconds: number;
    /** While submissions wait for the daily cap: when they resume. */
    waitingUntil: string | null;
    /** While the service answers nothing: since when (the run probes it, and exits 4 after --unreachable-minutes). */
    unreachableSince: string | null;
    /** Paused (genbatch pause) since then, a run holding the state or not: nothing new is sent until genbatch resume. */
    pausedSince: string | null;
    /**
     * While the bucket answers nothing but faults (its last: `code`): since when, and when the run's calls to it
     * give up (then it exits 4 with what waits kept for the same command).
     */
    bucket: { since: string; givesUpAt: string; code: string | null } | null;
  };
  /** Items and credits per tag (only the items that have tags). */
  tags: { tag: string; items: number; done: number; charged: number; refunded: number; net: number }[];
  /** Review decisions (genbatch review) on the done items' current outputs. */
  review: { approved: number; rejected: number; unreviewed: number; rejectedByChecks: number };
  /**
   * Items waiting for a decision on their gates: how many, what they would cost (each once; `unpriced` have no
   * price the last run knew), and each gate they wait on with its waiting items and their credits.
   */
  decisions: Omit<WaitingForDecisions, 'gates'> & {
    /** Each gate: `made` when it can be decided now; with an approval timeout, when it decides and what. */
    gates: (WaitingForDecisions['gates'][number] & { deadline?: string; onTimeout?: 'skip' | 'approve' })[];
  };
  /** What the open items of each state wait for (a reason, and a time where it is a matter of time): why a run is quiet. */
  waiting: Waiting[];
  /** Only while a run is under way. */
  eta: { seconds: number; at: string; basis: 'observed' | 'limits' } | null;
  /**
   * Each API key the state's attempts were sent with, by fingerprint ('' for
   * attempts from before keys were recorded): its jobs, credits, credits on
   * the current key day, and the open items that wait for it or run on it.
   */
  keys: { fingerprint: string; jobs: number; charged: number; refunded: number; chargedToday: number; open: number }[];
  /**
   * Outputs going to a bucket (the last run's --out s3://...): how many
   * outputs and web copies are published, how many wait to be (with their
   * bytes), how many of those a run could not publish (a name another object
   * holds), and of each, the copies.
   */
  publication: ({ to: string } & PublicationCounts) | null;
  /** Web copies the manifest asks of the current image outputs that no run has made yet (the same command makes them). */
  copies: { missing: number };
  /**
   * The service the state was made against: a simulator or not, and its base URL (`in-process` for a rehearsal);
   * `inferred` for a state an older genbatch made. Null where nothing tells (an older state, or nothing ran).
   */
  madeAgainst: { simulator: boolean; service: string; inferred: boolean } | null;
}

const iso = (ms: number | null | undefined) => (ms ? new Date(ms).toISOString() : null);

/** The run's progress from the state file alone: no network. */
export function collectStatus(store: Store, where: { manifest: string; state: string }, now: number): Status {
  const counts = store.itemReports.counts();
  const { charged, refunded } = store.attempts.totals();
  const sessions = store.runs.all();
  const last = sessions.at(-1);
  const running = Boolean(last && last.ended_at === null && lockHolder(where.state)?.alive);
  const seconds = runSeconds(sessions, running ? now : undefined);
  const waitingUntil = running && last?.waiting_until && last.waiting_until > now ? last.waiting_until : null;
  const unreachableSince = running ? (last?.unreachable_since ?? null) : null;
  const asked = store.steering.request();
  const pausedSince = asked?.mode === 'paused' ? asked.since : null;
  return {
    manifest: where.manifest,
    state: where.state,
    items: { total: Object.values(counts).reduce((a, b) => a + b, 0), ...counts },
    credits: { charged, refunded, net: charged - refunded },
    failures: store.itemReports.failuresByCode(),
    problems: store.itemReports.problems(),
    skippedByDecision: store.itemReports.skippedByDecision().map((p) => ({ id: p.id, reason: p.message })),
    // A resend waiting for its time holds no slot: it is not in flight.
    inFlight: counts.submitting - store.itemReports.deferredResends() + counts.running,
    removed: store.itemReports.removed(),
    changed: store.itemSync.changedIds().length,
    run: {
      running,
      sessions: sessions.length,
      startedAt: iso(sessions[0]?.started_at),
      lastActiveAt: iso(last && (running ? now : (last.ended_at ?? last.heartbeat_at))),
      seconds: Math.round(seconds),
      waitingUntil: iso(waitingUntil),
      unreachableSince: iso(unreachableSince),
      pausedSince: iso(pausedSince),
      bucket: running && last?.bucket_trouble_since ? bucketOf(last) : null,
    },
    waiting: waitingFor(store, now, { running, waitingUntil, unreachableSince, pausedSince, stalled: stalledOf(last) }),
    tags: store.itemReports.byTag().map((t) => ({ ...t, net: t.charged - t.refunded })),
    review: store.reviews.counts(),
    decisions: withDeadlines(store, last?.time_scale ?? 1),
    eta: running && last ? etaOf(store, last, charged, now) : null,
    keys: keysOf(store, new RunClock(Date.now, last?.time_scale ?? 1).dayOf(now)),
    publication: last?.out_dir?.startsWith('s3://') ? { to: last.out_dir, ...store.publications.counts() } : null,
    copies: { missing: store.webCopies.missing() },
    madeAgainst: madeAgainstOf(store),
  };
}

/**
 * What waits for a decision, each gate with the deadline its approval timeout sets (in real time: the timeout is in
 * the service's, which a time-scaled run shrinks by its scale).
 */
function withDeadlines(store: Store, timeScale: number): Status['decisions'] {
  const waiting = store.gates.decisions();
  const timed = new Map(store.gates.withTimeouts().map((g) => [g.id, g]));
  return {
    ...waiting,
    gates: waiting.gates.map((g) => {
      const t = timed.get(g.id);
      if (!t) return g;
      return { ...g, deadline: new Date(t.madeAt + t.timeoutMs / timeScale).toISOString(), onTimeout: t.onTimeout };
    }),
  };
}

/** How status says what a state was made against. */
export function madeAgainstLine(made: NonNullable<Status['madeAgainst']>): string {
  return `made against: ${describeService(made)}${made.inferred ? ' (as its runs show)' : ''}`;
}

function madeAgainstOf(store: Store): Status['madeAgainst'] {
  const made = madeAgainst(store);
  return made ? { simulator: made.simulator, service: made.service, inferred: made.how === 'inferred' } : null;
}

function bucketOf(run: RunRow): Status['run']['bucket'] {
  return {
    since: iso(run.bucket_trouble_since)!,
    givesUpAt: iso(run.bucket_gives_up_at) ?? iso(run.bucket_trouble_since)!,
    code: run.bucket_trouble_code,
  };
}

/** The downloads the run's last heartbeat found silent, if any. */
function stalledOf(run: RunRow | undefined): RunWaits['stalled'] {
  if (!run?.stalled_transfers || run.stalled_since === null) return undefined;
  return { count: run.stalled_transfers, since: run.stalled_since, idleTimeoutMs: run.idle_timeout_ms };
}

function keysOf(store: Store, today: number): Status['keys'] {
  const todayBy = new Map(store.accounting.byKeyOn(today).map((r) => [r.key_fp, r.charged]));
  const openBy = new Map(store.itemReports.openByKey().map((r) => [r.key_fp, r.n]));
  return store.attempts.byKey().map((k) => ({
    fingerprint: k.key_fp,
    jobs: k.jobs,
    charged: k.charged,
    refunded: k.refunded,
    chargedToday: todayBy.get(k.key_fp) ?? 0,
    open: openBy.get(k.key_fp) ?? 0,
  }));
}

/** Time spent running, over all sessions: a killed one counts to its last heartbeat, a live one (`liveNow`) to now. */
export function runSeconds(sessions: readonly RunRow[], liveNow?: number): number {
  const last = sessions.at(-1);
  return (
    sessions.reduce(
      (sum, r) =>
        sum + ((r === last && liveNow !== undefined ? liveNow : (r.ended_at ?? r.heartbeat_at)) - r.started_at),
      0,
    ) / 1000
  );
}

/** The ETA of the run this process is doing (its latest session), as status would give it. */
export function liveEta(store: Store, now: number): Status['eta'] {
  const run = store.runs.all().at(-1);
  return run && run.ended_at === null ? etaOf(store, run, store.attempts.totals().charged, now) : null;
}

function etaOf(store: Store, run: RunRow, charged: number, now: number): Status['eta'] {
  const limits = JSON.parse(run.limits) as KeyLimits;
  const work = store.itemReports.workByType();
  const submitted = work.image.submitted + work.video.submitted;
  const perItem = submitted > 0 ? charged / submitted : 0;
  const eta = estimateEta({
    now,
    run: { startedAt: run.started_at, limits, timeScale: run.time_scale, waitingUntil: run.waiting_until ?? undefined },
    open: { images: work.image.open, videos: work.video.open },
    finished: store.itemReports.finishedSince(run.started_at),
    credits: {
      toSpend: perItem * (work.image.pending + work.video.pending),
      chargedToday: store.accounting.chargedOn(new RunClock(Date.now, run.time_scale).dayOf(now)),
    },
  });
  return { seconds: eta.seconds, at: new Date(eta.at).toISOString(), basis: eta.basis };
}
