import { spawn } from 'node:child_process';
import type { Logger } from '../log/logger.js';
import type { RunEvent } from '../runner/index.js';

export type NotifyEventName = 'ended' | 'waiting-daily-cap' | 'waiting-for-decision' | 'stopped' | 'stalled';

/** The small JSON document a webhook or command receives. */
export interface NotifyEvent {
  event: NotifyEventName;
  run: string;
  manifest: string;
  reason: string;
  counts: Record<string, number>;
  credits: { charged: number; refunded: number; net: number };
  time: string;
}

export interface NotifierOptions {
  url?: string;
  command?: string;
  run: string;
  manifest: string;
  /** No item ended and nothing was submitted for this long: a `stalled` event (again after each stall). */
  stallMs: number;
  /** Counts and credits as they are now (from the state's tallies: a few rows). */
  snapshot: () => { counts: Record<string, number>; credits: { charged: number; refunded: number } };
  logger?: Logger;
  /** Each delivery, its retries included, gives up after this long. */
  timeoutMs?: number;
  now?: () => number;
}

const DEFAULT_TIMEOUT_MS = 5_000;
const ATTEMPTS = 3;

/**
 * Tells a webhook (POST) or a command (the event on stdin) when a run needs
 * someone: it ended, stopped early, waits for the daily cap, or made no
 * progress for a while. A delivery has a short deadline, is retried within
 * it and logged; it never throws and never holds the run up, and the URL is
 * logged by its host alone (a webhook's path or userinfo may be its secret).
 */
export class Notifier {
  private readonly pending = new Set<Promise<void>>();
  private lastProgress: number;
  private stallTimer: NodeJS.Timeout | undefined;
  private waitingNotified = false;
  /** Said once decisions started waiting, until none waits. */
  private decisionsNotified = false;
  private readonly timeoutMs: number;
  private readonly now: () => number;

  constructor(private readonly options: NotifierOptions) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.now = options.now ?? Date.now;
    this.lastProgress = this.now();
  }

  /** Starts watching for a stall. */
  start(): void {
    this.armStall();
  }

  /** No more events: the run is over, whatever way it ended. */
  stop(): void {
    if (this.stallTimer) clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
  }

  readonly onEvent = (event: RunEvent): void => {
    if (event.kind === 'accepted' || event.kind === 'item-final' || event.kind === 'job-ended') {
      this.lastProgress = this.now();
      this.waitingNotified = false;
      this.armStall();
    } else if (event.kind === 'waiting' && /daily/i.test(event.reason) && !this.waitingNotified) {
      this.waitingNotified = true;
      this.send(
        'waiting-daily-cap',
        `submissions wait for ${event.reason} until ${new Date(event.untilMs).toISOString()}`,
      );
    } else if (event.kind === 'waiting-for-decision') {
      // One message when decisions start waiting, not one per item or per change; again once none waited.
      if (event.items === 0) this.decisionsNotified = false;
      else if (!this.decisionsNotified) {
        this.decisionsNotified = true;
        // Waiting for a person is no stall.
        if (this.stallTimer) clearTimeout(this.stallTimer);
        this.stallTimer = undefined;
        this.send(
          'waiting-for-decision',
          `${event.items} item${event.items === 1 ? ' waits' : 's wait'} for a decision on ${event.gates} gate${event.gates === 1 ? '' : 's'}, ${event.credits} credit${event.credits === 1 ? '' : 's'} if approved (genbatch review, or genbatch approve)`,
        );
      }
    } else if (event.kind === 'stopping') {
      this.send('stopped', event.reason);
    }
  };

  /** The run's end: sent, then every delivery still under way is waited for (each within its deadline). */
  async ended(reason: string): Promise<void> {
    this.stop();
    this.send('ended', reason);
    await Promise.all([...this.pending]);
  }

  private armStall(): void {
    if (this.stallTimer) clearTimeout(this.stallTimer);
    this.stallTimer = setTimeout(() => {
      const minutes = (this.now() - this.lastProgress) / 60_000;
      this.send(
        'stalled',
        `no item ended and nothing was submitted for ${minutes < 1 ? `${Math.round(minutes * 60)} s` : `${Math.round(minutes)} min`}`,
      );
      this.armStall();
    }, this.options.stallMs);
    this.stallTimer.unref();
  }

  private send(name: NotifyEventName, reason: string): void {
    let snapshot: ReturnType<NotifierOptions['snapshot']>;
    try {
      snapshot = this.options.snapshot();
    } catch (error) {
      // The state is gone (a run that ended by a crash): a notification never turns into one more error.
      this.options.logger?.warn({ event: name, error: (error as Error).message }, 'notification not sent');
      return;
    }
    const { counts, credits } = snapshot;
    const event: NotifyEvent = {
      event: name,
      run: this.options.run,
      manifest: this.options.manifest,
      reason,
      counts,
      credits: { ...credits, net: credits.charged - credits.refunded },
      time: new Date(this.now()).toISOString(),
    };
    const delivery = this.deliver(event).finally(() => this.pending.delete(delivery));
    this.pending.add(delivery);
  }

  private async deliver(event: NotifyEvent): Promise<void> {
    const deadline = AbortSignal.timeout(this.timeoutMs);
    const target = this.options.url ? `webhook ${hostOf(this.options.url)}` : 'notify command';
    let lastError = '';
    for (let attempt = 1; attempt <= ATTEMPTS && !deadline.aborted; attempt++) {
      try {
        if (this.options.url) await postJson(this.options.url, event, deadline);
        else if (this.options.command) await runCommand(this.options.command, event, deadline);
        this.options.logger?.info({ event: event.event, target, attempt }, 'notification sent');
        return;
      } catch (error) {
        lastError = (error as Error).message;
        if (attempt < ATTEMPTS) await pause(250 * attempt, deadline);
      }
    }
    this.options.logger?.warn(
      { event: event.event, target, error: redact(lastError, this.options.url) },
      'notification not delivered',
    );
  }
}

async function postJson(url: string, event: NotifyEvent, signal: AbortSignal): Promise<void> {
  // fetch refuses a URL with credentials in it: they go as Basic authentication instead.
  const target = new URL(url);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (target.username || target.password) {
    headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`).toString('base64')}`;
    target.username = '';
    target.password = '';
  }
  const res = await fetch(target, { method: 'POST', headers, body: JSON.stringify(event), signal });
  await res.arrayBuffer().catch(() => undefined);
  if (!res.ok) throw new Error(`the webhook answered ${res.status}`);
}

function runCommand(command: string, event: NotifyEvent, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, { shell: true, stdio: ['pipe', 'ignore', 'ignore'], signal });
    child.on('error', (error) => reject(signal.aborted ? new Error('the notify command took too long') : error));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`the notify command exited ${code}`))));
    child.stdin.on('error', () => undefined); // a command that does not read its input
    child.stdin.end(`${JSON.stringify(event)}\n`);
  });
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/** The host a webhook URL names, without userinfo, path or query (any of which may hold its secret). */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(an unparsable URL)';
  }
}

function redact(message: string, url: string | undefined): string {
  return url ? message.split(url).join(hostOf(url)) : message;
}
