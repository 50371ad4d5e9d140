import { Readable } from 'node:stream';
import { sleep } from '../../util/sleep.js';
import { Outage } from '../../util/outage.js';
import { backoffMs, type Backoff } from '../../util/backoff.js';
import { bucketPolicy, type CallReaction, classify, FIRST_BACKOFF_MS, LONGEST_BACKOFF_MS } from './bucket-policy.js';
import type { BucketTrouble, ByteRange } from '../sink.js';
import {
  BucketError,
  type ObjectSource,
  type BucketClient,
  type BucketCall,
  type BucketObject,
} from './bucket-client.js';

/**
 * While the bucket answers nothing and a call waits on it, a cheap look (a
 * HEAD of the last key asked for) goes this often, each given up after the
 * second figure: the return is seen though every call sleeps or hangs.
 */
const LOOK_EVERY_MS = 500;
const LONGEST_LOOK_MS = 2_000;

type BackOff = Extract<CallReaction, { do: 'back-off' }>;

/** How long the bucket's faults are ridden out. */
export interface Patience {
  /** A request that moves no byte for this long is abandoned and sent again (--idle-timeout). */
  idleTimeoutMs: number;
  /** The bucket answering nothing but faults for this long: a call gives up (--unreachable-minutes). */
  unreachableMs: number;
  /** The first backoff and the longest (tests shrink them): 200 ms and 15 s. */
  backoff?: Backoff;
  now?: () => number;
  random?: () => number;
}

/** An attempt that has moved no byte for this long when the bucket answers again was swallowed by the outage. */
const STUCK_MS = 1_000;

/** The code of an attempt given up because it was sent into an outage that another call's answer ended. */
const OUTAGE_ENDED = 'OUTAGE_ENDED';

/**
 * The one fault policy of every call to a bucket, in front of the client that
 * speaks to it: a slow-down (503, 500, 429), a refused or reset connection
 * and a request that moves no byte for `idleTimeoutMs` (a silent connect, answer or
 * body, whatever the SDK's own timeouts do) are backed off with jitter and
 * sent again, until the bucket has answered nothing else for
 * `unreachableMs`; a denial, a missing bucket or any other answer is thrown
 * at once. The trouble is the bucket's, not one call's: every call shares
 * since when it lasts, and any answer ends it. A body being read that goes
 * silent or is cut is taken up again from its next byte.
 */
export class PatientBucket implements BucketClient {
  readonly bucket: string;
  private troubleSince: number | undefined;
  private lastCode = '';
  private readonly listeners = new Set<(trouble: BucketTrouble | undefined) => void>();
  /**
   * The trouble's calls that got no answer at all (not only slow-downs): the
   * outage they make, when it last ended (an attempt sent before then, into
   * it, is sent again at once), and the calls asleep in a backoff for want
   * of any answer, whom the bucket's first answer wakes. The service's
   * reachability uses the same.
   */
  private readonly outage: Outage;
  /** Attempts under way, each with when it last moved a byte: one sent into an outage is given up at its end. */
  private readonly underWay = new Set<{ movedAt: number; abandon: () => void }>();
  /** Calls under way (asleep or sent): the looks for the bucket's return go only while one waits. */
  private calls = 0;
  /** The key last asked for (one the credentials may look at), and the looks under way, if any. */
  private lastKey: string | undefined;
  private looks: AbortController | undefined;
  /** Aborted when every call is given up at once (an interrupt's end that the bucket did not answer in time). */
  private readonly closing = new AbortController();
  private readonly now: () => number;
  private readonly random: () => number;

  constructor(
    private readonly inner: BucketClient,
    private readonly patience: Patience,
  ) {
    this.bucket = inner.bucket;
    this.now = patience.now ?? Date.now;
    this.random = patience.random ?? Math.random;
    this.outage = new Outage(this.now);
  }

  /** While the bucket answers nothing but faults: since when, and when calls give up. */
  get trouble(): BucketTrouble | undefined {
    if (this.troubleSince === undefined) return undefined;
    return {
      since: this.troubleSince,
      givesUpAt: this.troubleSince + this.patience.unreachableMs,
      code: this.lastCode,
    };
  }

  /**
   * Every call under way or to come fails at once with `why`: an interrupted
   * run gives the bucket a second, and what it has not written by then (the
   * results, the last snapshot, the lease's release) is the next run's.
   */
  abandon(why: string): void {
    if (!this.closing.signal.aborted) this.closing.abort(new BucketError(why, 'unreachable', 'ABANDONED'));
  }

  /** Whether `abandon` was called. */
  get abandoned(): boolean {
    return this.closing.signal.aborted;
  }

  /** Hears the trouble begin (and each new fault in it) and end (undefined). */
  watch(listener: (trouble: BucketTrouble | undefined) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  head(key: string, call?: BucketCall): Promise<BucketObject | undefined> {
    return this.call(key, call, (c) => this.inner.head(key, c));
  }

  /**
   * Create-only, sent again only after a look finds nothing under the key: a
   * put whose answer was lost may have landed, and a bucket that ignores
   * If-None-Match (s3rver, some others) would take the resend over it.
   */
  putNew(key: string, source: ObjectSource, call?: BucketCall): Promise<'created' | 'exists'> {
    let sent = false;
    return this.call(key, call, async (c) => {
      if (sent && (await this.inner.head(key, c))) return 'exists';
      sent = true;
      return this.inner.putNew(key, source, c);
    });
  }

  putReplace(key: string, source: Omit<ObjectSource, 'sha256'>, call?: BucketCall): Promise<void> {
    return this.call(key, call, (c) => this.inner.putReplace(key, source, c));
  }

  delete(key: string, call?: BucketCall): Promise<void> {
    return this.call(key, call, (c) => this.inner.delete(key, c));
  }

  close(): void {
    this.inner.close();
  }

  async get(key: string, range?: ByteRange, call?: BucketCall): Promise<{ size: number; body: Readable } | undefined> {
    const got = await this.call(key, call, (c) => this.inner.get(key, range, c));
    if (!got) return undefined;
    const from = range?.start ?? 0;
    const to = range ? Math.min(range.end, got.size - 1) : got.size - 1;
    return { size: got.size, body: Readable.from(this.bodyOf(key, got.body, from, to, call?.signal)) };
  }

  /** The body's bytes `from`..`to`: taken up again from the next byte when it goes silent or is cut. */
  private async *bodyOf(
    key: string,
    first: Readable,
    from: number,
    to: number,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<Buffer> {
    let at = from;
    let body = first;
    for (;;) {
      try {
        for await (const chunk of untilSilent(body, this.patience.idleTimeoutMs)) {
          at += chunk.length;
          yield chunk;
        }
        if (at > to) return;
        throw new BucketError(`GET ${key}: the body ended after ${at - from} bytes`, 'unreachable', 'ECONNRESET');
      } catch (error) {
        body.destroy();
        const fault = classify(error, `GET ${key}`);
        const reaction = bucketPolicy('call', fault);
        if (signal?.aborted || reaction.do !== 'back-off') throw fault;
        await this.waitOut(fault, reaction, signal);
        const rest = await this.call(key, { signal }, (c) => this.inner.get(key, { start: at, end: to }, c));
        if (!rest) throw new BucketError(`GET ${key}: the object is gone`, 'failed', 'NoSuchKey');
        body = rest.body;
      }
    }
  }

  /** One call, sent again after each passing fault until it is answered or the bucket's trouble has lasted too long. */
  private async call<T>(
    key: string,
    call: BucketCall | undefined,
    attempt: (call: BucketCall) => Promise<T>,
  ): Promise<T> {
    const signal = call?.signal ? AbortSignal.any([call.signal, this.closing.signal]) : this.closing.signal;
    if (signal.aborted) throw signal.reason;
    this.lastKey = key;
    this.calls++;
    try {
      return await this.tries(signal, attempt);
    } finally {
      // Nothing waits on the bucket any more: a look under way for its return is given up (it would hold the exit).
      if (--this.calls === 0 && this.outage.waiting === 0) this.looks?.abort();
    }
  }

  private async tries<T>(signal: AbortSignal, attempt: (call: BucketCall) => Promise<T>): Promise<T> {
    // Since when this call has met nothing but faults: it gives up after as long as the bucket's trouble would, though
    // other calls are answered meanwhile (a bucket that answers looks but never takes a write).
    let faultedSince: number | undefined;
    for (let tries = 0; ; tries++) {
      const sentAt = this.now();
      try {
        const value = await this.untilIdle(signal, attempt);
        this.answered(sentAt);
        return value;
      } catch (error) {
        const fault = classify(error, 'a bucket call');
        const faultedAt = this.now();
        faultedSince ??= faultedAt;
        if (signal.aborted) throw this.closing.signal.aborted ? this.closing.signal.reason : error;
        const reaction = bucketPolicy('call', fault);
        if (reaction.do !== 'back-off') {
          // A refusal is an answer: the bucket is there.
          this.answered(sentAt);
          throw fault;
        }
        // Sent into an outage that has ended since (given up by its end, or at its own idle timeout): sent again at once.
        if (fault.code === OUTAGE_ENDED || (reaction.noAnswer && this.outage.sentIntoEnded(sentAt))) {
          tries = -1;
          continue;
        }
        // A slow-down is an answer too: those waiting for any go, though this call backs off as asked.
        if (!reaction.noAnswer) this.outage.release(true);
        // Woken by the bucket's return: its backoff starts over (an outage's tries would make a SlowDown's 15 s).
        if (await this.waitOut(fault, reaction, signal, { tries, faultedSince, faultedAt })) tries = -1;
      }
    }
  }

  /**
   * A passing fault: the trouble goes on (said to the watchers); the backoff
   * is slept, or the call gives up. True when the bucket's first answer after
   * an outage ended the sleep.
   */
  private async waitOut(
    fault: BucketError,
    reaction: BackOff,
    signal: AbortSignal | undefined,
    /** The call's tries so far; since when it has met nothing but faults; when it met this one. */
    {
      tries = 0,
      faultedSince = Number.POSITIVE_INFINITY,
      faultedAt,
    }: { tries?: number; faultedSince?: number; faultedAt?: number } = {},
  ): Promise<boolean> {
    const now = this.now();
    // The bucket's trouble began with this fault, met a moment before (the clock has moved since, on a busy machine).
    this.troubleSince ??= faultedAt ?? now;
    if (reaction.noAnswer) this.outage.begin(now);
    this.lastCode = fault.code;
    const trouble = this.trouble!;
    for (const listener of this.listeners) listener(trouble);
    const since = Math.min(trouble.since, faultedSince);
    if (now >= since + this.patience.unreachableMs)
      throw new BucketError(
        `${fault.message}; the bucket has answered ${since < trouble.since ? 'this request ' : ''}nothing but faults since ${new Date(since).toISOString()} (--unreachable-minutes)`,
        'unreachable',
        fault.code,
        { cause: fault },
      );
    const { firstMs, longestMs } = this.patience.backoff ?? {
      firstMs: FIRST_BACKOFF_MS,
      longestMs: LONGEST_BACKOFF_MS,
    };
    const step = backoffMs(tries, { firstMs, longestMs: Math.min(longestMs, reaction.longestMs) }, this.random);
    const wait = Math.min(since + this.patience.unreachableMs - now, step);
    if (reaction.noAnswer) {
      void this.lookForReturn();
      return this.sleepUntilAnswer(wait, signal);
    }
    await sleep(wait, signal);
    return false;
  }

  /** A backoff that ends early (true) when the bucket answers any call; rejects as `sleep` does when `signal` aborts. */
  private async sleepUntilAnswer(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
    const slept = new AbortController();
    const timer = setTimeout(() => slept.abort(), Math.max(0, ms));
    try {
      const answered = await this.outage.untilAnswer(signal ? AbortSignal.any([signal, slept.signal]) : slept.signal);
      if (signal?.aborted) throw signal.reason;
      return answered;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * While the bucket answers nothing and a call waits, a HEAD of the last key
   * every half second: its answer (any answer: a 404, a 403) ends the outage
   * for every call, as a call's own would.
   */
  private async lookForReturn(): Promise<void> {
    const key = this.lastKey;
    if (this.looks || key === undefined) return;
    const looks = new AbortController();
    this.looks = looks;
    const signal = AbortSignal.any([looks.signal, this.closing.signal]);
    const idleTimeoutMs = Math.min(this.patience.idleTimeoutMs, LONGEST_LOOK_MS);
    try {
      while (this.outage.isDown && (this.calls > 0 || this.outage.waiting > 0)) {
        await sleep(LOOK_EVERY_MS, signal);
        if (!this.outage.isDown) return;
        const sentAt = this.now();
        try {
          await this.untilIdle(signal, (c) => this.inner.head(key, c), idleTimeoutMs);
          this.answered(sentAt);
        } catch (error) {
          if (signal.aborted) return;
          const fault = classify(error, `HEAD ${key}`);
          // A slow-down is the bucket's answer: the calls asleep go, and one of theirs ends the trouble.
          const reaction = bucketPolicy('call', fault);
          if (reaction.do === 'throw') this.answered(sentAt);
          else if (!reaction.noAnswer) this.outage.release(true);
        }
      }
    } catch {
      // Given up (nothing waits, or every call is abandoned): the looks end.
    } finally {
      if (this.looks === looks) this.looks = undefined;
    }
  }

  /**
   * A call sent at `sentAt` was answered: the trouble, if any, is over. Every
   * call asleep for want of an answer goes now, and every attempt that has
   * moved no byte since before `sentAt` (sent into the outage, swallowed) is
   * given up and sent again at once.
   */
  private answered(sentAt: number): void {
    if (this.troubleSince === undefined) return;
    this.troubleSince = undefined;
    const noAnswer = this.outage.isDown;
    this.looks?.abort();
    const now = this.now();
    for (const listener of this.listeners) listener(undefined);
    // Only after an outage of no answers (a slow-down's requests are being served), and only an attempt stuck a while:
    // a write given up while it is landing would be sent again over itself where a bucket ignores If-None-Match.
    if (noAnswer)
      for (const attempt of [...this.underWay])
        if (attempt.movedAt < sentAt && now - attempt.movedAt >= STUCK_MS) attempt.abandon();
    // The outage ends (an attempt sent into it is sent again at once), and the calls asleep for want of an answer go.
    this.outage.answered();
  }

  /** One attempt, abandoned when it moves no byte for the idle timeout (its own timeouts may never fire). */
  private untilIdle<T>(
    signal: AbortSignal | undefined,
    attempt: (call: BucketCall) => Promise<T>,
    idleTimeoutMs = this.patience.idleTimeoutMs,
  ): Promise<T> {
    const ends = new AbortController();
    const interrupt = () => ends.abort(signal?.reason);
    signal?.addEventListener('abort', interrupt, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const giveUp = (reject: (error: unknown) => void, error: BucketError) => {
      ends.abort(error);
      reject(error);
    };
    const tracked = { movedAt: this.now(), abandon: () => {} };
    this.underWay.add(tracked);
    return new Promise<T>((resolve, reject) => {
      const silent = () =>
        giveUp(reject, new BucketError(`no byte for ${idleTimeoutMs / 1000} s`, 'unreachable', 'IDLE_TIMEOUT'));
      tracked.abandon = () =>
        giveUp(reject, new BucketError('sent during an outage that has ended', 'unreachable', OUTAGE_ENDED));
      const arm = () => {
        tracked.movedAt = this.now();
        clearTimeout(timer);
        timer = setTimeout(silent, idleTimeoutMs);
      };
      arm();
      if (signal?.aborted) return reject(signal.reason);
      // An attempt abandoned here may settle later: it is heard (never unhandled) and ignored.
      attempt({ signal: ends.signal, progress: arm }).then(resolve, reject);
    }).finally(() => {
      clearTimeout(timer);
      this.underWay.delete(tracked);
      signal?.removeEventListener('abort', interrupt);
    });
  }
}

/** The chunks of `body`, failing once none has come for `idleTimeoutMs` while one was awaited (a slow reader is not silence). */
async function* untilSilent(body: Readable, idleTimeoutMs: number): AsyncGenerator<Buffer> {
  const chunks = body[Symbol.asyncIterator]();
  for (;;) {
    const timer = setTimeout(
      () => body.destroy(new BucketError(`no byte for ${idleTimeoutMs / 1000} s`, 'unreachable', 'IDLE_TIMEOUT')),
      idleTimeoutMs,
    );
    let next: IteratorResult<Buffer>;
    try {
      next = await chunks.next();
    } finally {
      clearTimeout(timer);
    }
    if (next.done) return;
    yield next.value;
  }
}
