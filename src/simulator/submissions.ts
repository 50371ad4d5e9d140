import { createHash, randomBytes } from 'node:crypto';
import type { SimKey } from './accounts.js';
import { IdempotencyKeys, UUID_PATTERN } from './idempotency.js';
import type { JobEnd } from './jobs.js';
import type { Accounts } from './accounts.js';
import type { Jobs } from './jobs.js';
import type { Ledger } from './ledger.js';
import type { ResolvedOptions } from './options.js';
import type { SeededRandom } from './random.js';
import type { Uploads } from './uploads.js';
import { SimError, invalid, limited } from './sim-error.js';
import { checkImageSubmission, checkVideoSubmission, type CheckedSubmission } from './submission-rules.js';
import type { SimRequest, SimResponse } from './types.js';

/** What submissions use of the service: passed in, so this module does not import it back. */
export interface SubmissionHost {
  readonly options: ResolvedOptions;
  readonly accounts: Accounts;
  readonly jobs: Jobs;
  readonly ledger: Ledger;
  readonly uploads: Uploads;
  readonly random: SeededRandom;
  now(): number;
  delay(ms: number): Promise<void>;
  renderJob(job: Parameters<Jobs['render']>[0]): Record<string, unknown>;
}

/**
 * Prompt markers that force an outcome, so tests and rehearsals can provoke a
 * given fault deterministically (rates do the same at random).
 */
export const MARKERS = {
  block: '[sim:block]',
  fail: '[sim:fail]',
  expire: '[sim:expire]',
  drop: '[sim:drop]',
  /** 503 UPSTREAM_UNAVAILABLE on the first request with each idempotency key. */
  unavailable: '[sim:unavailable]',
  /** 503 MODERATION_UNAVAILABLE on the first request with each idempotency key. */
  moderationUnavailable: '[sim:moderation-unavailable]',
  /** The first output links issued for the job are already expired. */
  expiredLink: '[sim:expired-link]',
  /** The job's image outputs are one flat grey (for the manifest's `checks: { blank: true }`). */
  flat: '[sim:flat]',
  /** The job's image outputs are 1024 x 1280, a real 1K output's size (the others are 192 x 192, small for speed). */
  large: '[sim:large]',
} as const;

/** POST /images and POST /videos: idempotency, checks in the service's order, charge, job. */
export class Submissions {
  /** Idempotency keys that already got their one marker-forced 503. */
  private readonly unavailableOnce = new Set<string>();

  constructor(
    private readonly service: SubmissionHost,
    readonly idempotency: IdempotencyKeys,
  ) {}

  async submit(type: 'image' | 'video', req: SimRequest, key: SimKey): Promise<SimResponse> {
    const idemKey = req.headers['idempotency-key'];
    if (typeof idemKey !== 'string' || !UUID_PATTERN.test(idemKey)) {
      throw invalid('Idempotency-Key', 'Every submission needs an Idempotency-Key header holding a new UUID.');
    }
    const service = this.service;
    const hash = IdempotencyKeys.hash({ type, body: req.body });
    const replayOf = this.idempotency.begin(key.label, idemKey, hash, service.now());
    if (replayOf) {
      const job = service.jobs.byId.get(replayOf)!;
      service.ledger.record({
        kind: 'replay',
        at: service.now(),
        key: key.label,
        jobId: job.id,
        idempotencyKey: idemKey,
      });
      return { status: 202, headers: {}, body: { job: service.renderJob(job) } };
    }
    try {
      const [min, max] = service.options.latencyMs;
      await service.delay(service.random.between(min, max)); // the window in which a concurrent resend is IN_FLIGHT
      service.jobs.settle(service.now());
      const checked = this.check(type, req.body, key);
      return this.create(checked, key, idemKey);
    } catch (error) {
      this.idempotency.abandon(key.label, idemKey);
      throw error;
    }
  }

  private check(type: 'image' | 'video', body: unknown, key: SimKey): CheckedSubmission {
    const service = this.service;
    const ctx = {
      key,
      uploads: service.uploads,
      jobs: service.jobs,
      limits: service.options.limits,
      now: service.now(),
    };
    return type === 'image' ? checkImageSubmission(body, ctx) : checkVideoSubmission(body, ctx);
  }

  /** The key's in-flight jobs, its daily cap, and the account's balance, each as the service refuses it. */
  private refuseOverLimits(sub: CheckedSubmission, key: SimKey, now: number): void {
    const { accounts, jobs } = this.service;
    const cap = sub.type === 'image' ? key.limits.imagesInFlight : key.limits.videosInFlight;
    const inFlight = jobs.inFlight(key.label, sub.type);
    if (inFlight >= cap) {
      throw limited(
        'CONCURRENCY_LIMIT',
        `This key already has ${inFlight} ${sub.type} jobs in flight (limit ${cap}).`,
        jobs.nextEnd(key.label, sub.type) - now,
        0,
      );
    }
    const usedToday = accounts.chargedToday(key, now);
    if (usedToday + sub.price > key.dailyCap) {
      throw limited(
        'DAILY_CAP_REACHED',
        `This key's daily cap of ${key.dailyCap} credits is reached (${usedToday} used today).`,
        accounts.msUntilNextDay(now),
        key.dailyCap - usedToday,
      );
    }
    const balance = accounts.balance(key.account);
    if (balance < sub.price) {
      throw new SimError(402, 'CREDITS_EXHAUSTED', `Not enough credits: ${sub.price} needed, ${balance} available.`, {
        required: sub.price,
      });
    }
  }

  /** Moderation, and a 503 (forced by a prompt marker once per key, or at random). */
  private refuseAtRandom(sub: CheckedSubmission, key: SimKey, idemKey: string, now: number): void {
    const { options, random } = this.service;
    if (sub.prompt.includes(MARKERS.block) || moderates(options.seed, sub.prompt, options.moderationRate)) {
      key.account.blockedAt.push(now);
      throw new SimError(422, 'CONTENT_VIOLATION', 'The prompt was blocked by moderation. Nothing was charged.');
    }
    const first = !this.unavailableOnce.has(idemKey);
    const forced =
      first && sub.prompt.includes(MARKERS.unavailable)
        ? 'UPSTREAM_UNAVAILABLE'
        : first && sub.prompt.includes(MARKERS.moderationUnavailable)
          ? 'MODERATION_UNAVAILABLE'
          : undefined;
    if (forced || random.chance(options.unavailableRate)) {
      this.unavailableOnce.add(idemKey);
      const code = forced ?? (random.chance(0.5) ? 'UPSTREAM_UNAVAILABLE' : 'MODERATION_UNAVAILABLE');
      throw new SimError(503, code, 'Temporarily unavailable; nothing was charged. Retry later.');
    }
  }

  private create(sub: CheckedSubmission, key: SimKey, idemKey: string): SimResponse {
    const service = this.service;
    const { options, accounts, jobs, random, ledger } = service;
    const now = service.now();
    this.refuseOverLimits(sub, key, now);
    this.refuseAtRandom(sub, key, idemKey, now);
    const [minMs, maxMs] = sub.type === 'image' ? options.imageMs : options.videoMs;
    const job = jobs.add({
      id: `job_${randomBytes(10).toString('hex')}`,
      type: sub.type,
      origin: 'api',
      account: key.account,
      keyLabel: key.label,
      model: sub.model,
      prompt: sub.prompt,
      params: sub.params,
      createdAt: now,
      endsAt: now + random.between(minMs, maxMs),
      end: this.decideEnd(sub.prompt),
      charged: sub.price,
      refunded: 0,
      outputCount: sub.type === 'image' ? options.imageOutputs : 1,
    });
    accounts.charge(key.account, sub.price);
    accounts.recordDailyCharge(key, now, sub.price);
    ledger.record({
      kind: 'charge',
      at: now,
      key: key.label,
      jobId: job.id,
      idempotencyKey: idemKey,
      credits: sub.price,
      prompt: sub.prompt,
      model: sub.model,
    });
    this.idempotency.complete(key.label, idemKey, job.id, now);
    if (sub.prompt.includes(MARKERS.drop) || random.chance(options.dropRate)) {
      ledger.record({ kind: 'dropped-response', at: now, key: key.label, jobId: job.id, idempotencyKey: idemKey });
      return { status: 0, headers: {}, body: null, drop: true };
    }
    return { status: 202, headers: {}, body: { job: service.renderJob(job) } };
  }

  private decideEnd(prompt: string): JobEnd {
    const { random, options } = this.service;
    if (prompt.includes(MARKERS.fail)) return 'FAILED';
    if (prompt.includes(MARKERS.expire)) return 'EXPIRED';
    if (random.chance(options.failureRate)) return 'FAILED';
    if (random.chance(options.expiryRate)) return 'EXPIRED';
    return 'COMPLETED';
  }
}

/**
 * Moderation judges the prompt, not the attempt: whether a prompt is blocked
 * is a fixed function of the seed and the prompt, so the same prompt is
 * blocked every time it is sent (as the spec's "must not be retried
 * unchanged" says), and `rate` of all prompts are.
 */
export function moderates(seed: number, prompt: string, rate: number): boolean {
  if (!(rate > 0)) return false;
  const digest = createHash('sha256').update(`${seed}\n${prompt}`).digest();
  return digest.readUInt32BE(0) / 4294967296 < rate;
}
