import type { GenbatchEvent, RunEvent } from '../library/index.js';
import type { ItemState, LiveView } from '../library/views.js';
import { formatDuration } from '../estimate/duration.js';
import { localTime, num, paintFor, type Paint } from './format.js';

const ETA_REFRESH_MS = 2_000;
const FRAME_MS = 250;
/** Off a terminal: a summary line this often, and on each change of the run's course. */
const SUMMARY_EVERY_MS = 30_000;
const STARTED_LINE_LATEST_MS = 1_000;
/** A terminal that reports no width (0 in `script` and some CI runners) is taken as this wide. */
const DEFAULT_COLUMNS = 80;

/** The submission limit the line shows the pace against: all keys' together. */
export interface PaceLimit {
  limit: number;
  /** The limit's window as it passes here (60 s for 10/min; a rehearsal's is shorter by its time scale). */
  windowMs: number;
  /** A rehearsal's time scale: its window passes this many times faster. */
  timeScale: number;
}

const REAL_PACE: PaceLimit = { limit: 10, windowMs: 60_000, timeScale: 1 };

/** What the live line says, gathered once per frame. */
export interface LiveFacts {
  counts: Record<ItemState, number>;
  /** Of the submitting items, those waiting for their time to be resent: not in flight. */
  resendLater?: number;
  total: number;
  credits: { charged: number; refunded: number };
  /** Seconds to go, when known. */
  etaSeconds: number | undefined;
  /** Submissions wait for the daily cap until then. */
  waitingUntil: number | undefined;
  /** The bucket answers nothing but faults since then; its calls give up at `givesUpAt`. */
  bucket?: { since: number; givesUpAt: number } | undefined;
  /** Paused from another shell since then. */
  pausedSince?: number | undefined;
  /** Submissions sent in the last window of the limit, and the limit. */
  pace: PaceLimit & { sent: number };
  now: number;
  /** With several keys: the open items each key has (by fingerprint). */
  keys?: { fingerprint: string; open: number }[] | undefined;
  /** Outputs going to a bucket: those saved that wait to be published. */
  unpublished?: number | undefined;
}

/**
 * The live line: progress and ETA first, then what is running, failed, spent
 * and the pace. Parts are dropped from the right to fit `columns`; the first
 * two (progress, ETA or the wait) never are.
 */
export function liveLine(f: LiveFacts, columns = Infinity): string {
  const c = f.counts;
  const failed = c.failed + c.rejected + c.blocked + c.skipped;
  const finished = c.done + failed;
  // The share is of the items that ended (done, failed, blocked…): "100% done 2/4" read as all done when two failed.
  const pct = f.total ? Math.floor((finished / f.total) * 100) : 100;
  const parts = [
    finished >= f.total
      ? `all ${num(f.total)} ended, ${num(c.done)} done`
      : `${pct}% ended, ${num(c.done)}/${num(f.total)} done`,
  ];
  if (f.pausedSince !== undefined) parts.push(`paused since ${localTime(f.pausedSince)}`);
  else if (f.bucket)
    parts.push(
      `waiting for the bucket since ${localTime(f.bucket.since)} (gives up at ${localTime(f.bucket.givesUpAt)})`,
    );
  else if (f.waitingUntil !== undefined && f.waitingUntil > f.now) {
    parts.push(
      `waiting for the daily cap until ${localTime(f.waitingUntil)} (in ${formatDuration((f.waitingUntil - f.now) / 1000)})`,
    );
  } else if (f.etaSeconds !== undefined && finished < f.total) parts.push(`ETA ${formatDuration(f.etaSeconds)}`);
  // In flight: what holds a slot. A resend waiting for its time holds none, and is said apart.
  const later = f.resendLater ?? 0;
  parts.push(`running ${num(c.submitting - later + c.running)}`);
  if (later) parts.push(`resend later ${num(later)}`);
  if (c.waiting) parts.push(`waiting for a decision ${num(c.waiting)}`);
  if (c.queued) parts.push(`queued ${num(c.queued)}`);
  if (c.downloading) parts.push(`downloading ${num(c.downloading)}`);
  if (f.unpublished) parts.push(`to publish ${num(f.unpublished)}`);
  if (c.maybe_accepted) parts.push(`maybe accepted ${num(c.maybe_accepted)}`);
  if (failed) parts.push(`failed ${num(failed)}`);
  parts.push(`credits ${num(f.credits.charged - f.credits.refunded)} net`);
  parts.push(paceText(f.pace));
  if (f.keys?.length) parts.push(`keys ${f.keys.map((k) => `${k.fingerprint.slice(0, 6)} ${num(k.open)}`).join(', ')}`);
  const fits = () => parts.join(' · ').length <= columns - 1;
  const keep = Math.min(2, parts.length);
  while (parts.length > keep && !fits()) parts.pop();
  // Narrower still: the percentage alone before the ETA (or the wait) gives way.
  if (!fits()) parts[0] = `${pct}%`;
  const line = parts.join(' · ');
  return line.length > columns - 1 ? `${line.slice(0, Math.max(0, columns - 2))}…` : line;
}

/**
 * The pace in the limit's own terms: submissions in its last window against
 * it. A rehearsal's window is shorter than the service's: the line says it is
 * scaled rather than show a rate of 600/min against a limit of 10/min.
 */
function paceText(p: LiveFacts['pace']): string {
  const sent = `${num(p.sent)}/${num(p.limit)}`;
  if (p.timeScale !== 1) return `${sent} per window (time x${num(p.timeScale)})`;
  return p.windowMs === 60_000 ? `${sent} per min` : `${sent} per ${formatDuration(p.windowMs / 1000)}`;
}

/** Events of single requests and transfers, which the live line does not print. */
const PER_REQUEST: ReadonlySet<RunEvent['kind']> = new Set([
  'submitted',
  'answer',
  'polled',
  'rate-limited',
  'downloaded',
  'download-failed',
  'outage',
]);

/**
 * What a run shows while it works. On a terminal: one live line, redrawn.
 * Otherwise (a log file, CI): a summary line every 30 s and on each change of
 * the run's course (started, waiting, resumed, stopping), never one per item;
 * the per-item events are in the JSON log.
 */
export class Progress {
  private timer: NodeJS.Timeout | undefined;
  private startedLine: NodeJS.Timeout | undefined;
  private submittedAt: number[] = [];
  private eta: { seconds: number | undefined; at: number; keys?: LiveFacts['keys'] } = { seconds: undefined, at: 0 };
  private waitingUntil: number | undefined;
  private bucket: LiveFacts['bucket'];
  private pausedSince: number | undefined;
  /** Outputs going to a bucket: saved and not yet published (counted from the state once, then by the events). */
  private unpublished: number | undefined;

  private readonly paint: Paint;
  private readonly keys: readonly string[];
  private readonly pace: PaceLimit;

  constructor(
    private readonly out: NodeJS.WriteStream,
    private readonly view: LiveView,
    private readonly total: number,
    options: {
      /** The run's keys, by fingerprint: with several, the line shows each one's open items. */
      keys?: readonly string[];
      /** The outputs go to a bucket: the line counts those waiting to be published. */
      publishing?: boolean;
      pace?: PaceLimit;
      env?: NodeJS.ProcessEnv;
    } = {},
  ) {
    this.keys = options.keys ?? [];
    if (options.publishing) this.unpublished = view.unpublished();
    this.pace = options.pace ?? REAL_PACE;
    this.paint = paintFor(out, options.env ?? process.env);
  }

  start(): void {
    if (this.out.isTTY) this.timer = setInterval(() => this.draw(), FRAME_MS);
    else {
      // Said at the run's first event (a second at the latest), not before its first submission: its counts
      // and ETA read the state (tens of milliseconds at 100,000 items).
      this.startedLine = setTimeout(() => this.sayStarted(), STARTED_LINE_LATEST_MS);
      this.startedLine.unref();
      this.timer = setInterval(() => this.say(), SUMMARY_EVERY_MS);
    }
    this.timer.unref();
  }

  private sayStarted(): void {
    if (!this.startedLine) return;
    clearTimeout(this.startedLine);
    this.startedLine = undefined;
    this.say('started');
  }

  onEvent = (event: GenbatchEvent): void => {
    // The start's own events: the start's lines say those.
    if (event.kind === 'started' || event.kind === 'service-unreachable' || event.kind === 'events-dropped') return;
    // Counted before the filter below: a download is one of a request's own events. A copy is published like an output.
    if (this.unpublished !== undefined && (event.kind === 'downloaded' || event.kind === 'copy-made'))
      this.unpublished += 1;
    else if (this.unpublished !== undefined && event.kind === 'published') this.unpublished -= 1;
    // A request's own events are the counts' and the pace's to show, redrawn from the state: no line of their own.
    if (PER_REQUEST.has(event.kind)) return;
    this.sayStarted();
    if (event.kind === 'accepted') {
      this.submittedAt.push(Date.now());
      if (this.waitingUntil !== undefined) {
        this.waitingUntil = undefined;
        this.say('resumed');
      }
    } else if (event.kind === 'waiting') {
      if (event.untilMs === this.waitingUntil) return;
      this.waitingUntil = event.untilMs;
      this.say(`waiting for ${event.reason} until ${localTime(event.untilMs)}`);
    } else if (event.kind === 'bucket-outage') {
      if (event.phase === 'down') {
        this.bucket = { since: event.since, givesUpAt: event.givesUpAt };
        this.say(
          `the bucket answers nothing but faults (${event.code ?? 'no answer'}): its calls are sent again until ${localTime(event.givesUpAt)}`,
        );
      } else {
        this.bucket = undefined;
        this.say('the bucket answers again');
      }
    } else if (event.kind === 'stopping') this.say(`stopping: ${event.reason}`);
    else if (event.kind === 'notice') this.say(`note: ${event.message}`);
    else if (event.kind === 'paused') {
      this.pausedSince = event.since;
      this.say(
        `paused since ${localTime(event.since)}: nothing new is sent; jobs in flight are polled and downloaded (genbatch resume goes on)`,
      );
    } else if (event.kind === 'resumed') {
      this.pausedSince = undefined;
      this.say('resumed');
    } else if (event.kind === 'waiting-for-decision') {
      if (event.items)
        this.say(
          `${event.items} item${event.items === 1 ? ' waits' : 's wait'} for a decision on ${event.gates} gate${event.gates === 1 ? '' : 's'}, ${event.credits} credit${event.credits === 1 ? '' : 's'} if approved (genbatch review, or genbatch approve ID …)`,
        );
      else this.say('no item waits for a decision');
    } else if (event.kind === 'decision') {
      const moved = [
        event.unlocked.length ? `${event.unlocked.length} to send` : '',
        event.skipped.length ? `${event.skipped.length} skipped, unpaid` : '',
      ].filter(Boolean);
      this.say(`${event.itemId} ${event.decision}${moved.length ? `: ${moved.join(', ')}` : ''}`);
    } else if (event.kind === 'stall')
      this.say(
        `note: nothing moved for ${Math.round(event.quietMs / 1000)} s (a bug: please report it with the log); waiting: ${event.waiting.map((w) => `${w.state} ${w.items} for ${w.for}`).join('; ')}`,
      );
  };

  /** Off a terminal, a line; on one, the message above the live line. */
  private say(what?: string): void {
    if (this.out.isTTY) {
      if (what) this.out.write(`\r\x1b[2K${what}\n`);
      return;
    }
    // A reason that is a sentence of its own (it ends in a full stop) is set off by a dash, not a colon.
    const lead = what ? (/[.!?]$/.test(what) ? `${what} — ` : `${what}: `) : '';
    this.out.write(`${localTime(Date.now())} ${lead}${liveLine(this.facts())}\n`);
  }

  private facts(): LiveFacts {
    const now = Date.now();
    const windowMs = Math.max(1, this.pace.windowMs);
    this.submittedAt = this.submittedAt.filter((t) => t > now - windowMs);
    // The same ETA as `genbatch status`, refreshed every few seconds rather than every frame.
    if (now - this.eta.at > ETA_REFRESH_MS)
      this.eta = { seconds: this.view.etaSeconds(now), at: now, keys: this.keysFacts() };
    return {
      counts: this.view.counts(),
      resendLater: this.view.deferredResends(),
      total: this.total,
      credits: this.view.credits(),
      etaSeconds: this.eta.seconds,
      waitingUntil: this.waitingUntil,
      bucket: this.bucket,
      pausedSince: this.pausedSince,
      pace: { ...this.pace, sent: this.submittedAt.length },
      now,
      keys: this.eta.keys,
      unpublished: this.unpublished,
    };
  }

  private keysFacts(): LiveFacts['keys'] {
    if (this.keys.length < 2) return undefined;
    const open = this.view.openByKey();
    return this.keys.map((fingerprint) => ({ fingerprint, open: open.get(fingerprint) ?? 0 }));
  }

  private draw(): void {
    // Coloured after it is fitted: the escape codes take no columns.
    const line = liveLine(this.facts(), this.out.columns || DEFAULT_COLUMNS).replace(/failed [\d,]+/, (m) =>
      this.paint.red(m),
    );
    this.out.write(`\r\x1b[2K${line}`);
  }

  stop(): void {
    if (!this.timer) return;
    this.sayStarted();
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.out.isTTY) {
      this.draw();
      this.out.write('\n');
    } else this.say('ended');
  }
}
