import type { RunClock } from '../scheduler/clock.js';
import type { KeyLimits, Rate } from '../scheduler/limits.js';
import type { ApiClient } from './client.js';
import { ApiError } from './errors.js';
import { policy } from './policy.js';
import type { Account } from './types.js';

export interface PoolKeyClient {
  fingerprint: string;
  client: ApiClient;
}

/** An API key the service accepted, with what it said of itself. */
export interface AcceptedKey {
  fingerprint: string;
  client: ApiClient;
  /** The key's limits: the flags, lowered where the key's `/me` shows lower ones. */
  limits: KeyLimits;
  /** The types the key may submit (its scopes); every type when not known. */
  scopes?: readonly ('image' | 'video')[] | undefined;
}

export interface PoolSetup {
  /** The keys the service accepts, each with its own limits. */
  keys: AcceptedKey[];
  /** What each of them (in the same order) said of itself: its `/me`. */
  accounts: Account[];
  /** Keys the service refused at once (401, a 403 code): left out of the run. */
  refused: { fingerprint: string; code: string; message: string }[];
  /** What every accepted key may submit, together. */
  scopes: string[];
}

/** What the pool needs of the run's clock: a rate of the service's in the run's time. */
type RunTime = Pick<RunClock, 'rate'>;

/** The slower of two rates: fewer requests per unit of time. */
function slower(flag: Rate, own: Rate | undefined, clock: RunTime): Rate {
  if (!own) return flag;
  const scaled = clock.rate(own);
  return scaled.count / scaled.windowMs < flag.count / flag.windowMs ? scaled : flag;
}

/**
 * A key's limits: the flags, lowered where its `/me` shows lower ones (a key
 * made with a lower cap, or lower limits). `/me` speaks in the service's own
 * time, which a rehearsal scales.
 */
export function keyLimits(flags: KeyLimits, me: Account, clock: RunTime): KeyLimits {
  const own = me.limits ?? {};
  return {
    submit: slower(flags.submit, own.submit, clock),
    read: slower(flags.read, own.read, clock),
    upload: slower(flags.upload, own.upload, clock),
    maxImagesInFlight: Math.min(flags.maxImagesInFlight, own.maxImagesInFlight ?? Infinity),
    maxVideosInFlight: Math.min(flags.maxVideosInFlight, own.maxVideosInFlight ?? Infinity),
    dailyCap: Math.min(flags.dailyCap, me.dailyCap ?? Infinity),
  };
}

/** Asks each key's `/me`: its scopes and limits; a key the service refuses is left out, with why. */
export async function setUpPool(
  clients: readonly PoolKeyClient[],
  flags: KeyLimits,
  /** The run's time: `/me` speaks in the service's own. */
  clock: RunTime,
  /** Bounds each key's `/me` (a start-up asks again rather than wait for an answer that may never come). */
  timeoutMs?: number,
  /** Ends the questions on their way (the start failed meanwhile, on the manifest say). */
  signal?: AbortSignal,
): Promise<PoolSetup> {
  const setup: PoolSetup = { keys: [], accounts: [], refused: [], scopes: [] };
  // Asked together: a pool starts as soon as one key would.
  const answers = await Promise.allSettled(clients.map(({ client }) => client.me(signal, timeoutMs)));
  for (const [i, { fingerprint, client }] of clients.entries()) {
    const answer = answers[i]!;
    if (answer.status === 'rejected') {
      const error: unknown = answer.reason;
      const reaction = error instanceof ApiError ? policy('account', error) : undefined;
      if (reaction?.do !== 'stop-run' || reaction.scope !== 'key' || clients.length === 1) throw error;
      setup.refused.push({ fingerprint, code: (error as ApiError).code, message: (error as ApiError).reason });
      continue;
    }
    const me = answer.value;
    const scopes = me.scopes.filter((s): s is 'image' | 'video' => s === 'image' || s === 'video');
    setup.keys.push({ fingerprint, client, limits: keyLimits(flags, me, clock), scopes });
    setup.accounts.push(me);
    for (const scope of me.scopes) if (!setup.scopes.includes(scope)) setup.scopes.push(scope);
  }
  return setup;
}

/**
 * The time scale a service says it runs at: a time-scaled simulator's /me
 * carries it (`x-simulator.timeScale`); the real service never does.
 */
export function serviceTimeScale(me: Account | undefined): number | undefined {
  const sim = me?.raw?.['x-simulator'] as { timeScale?: unknown } | undefined;
  return typeof sim?.timeScale === 'number' && Number.isFinite(sim.timeScale) && sim.timeScale > 0
    ? sim.timeScale
    : undefined;
}

/** Whether a service says it is a simulator: `genbatch simulate`'s /me carries `x-simulator`; the real service's never does. */
export function saysSimulator(me: Account | undefined): boolean {
  const sim = me?.raw?.['x-simulator'];
  return typeof sim === 'object' && sim !== null;
}

/** The pool's keys' limits again, from the same /me answers, in another run time (a service's own time scale adopted). */
export function rescaledPool(pool: PoolSetup, flags: KeyLimits, clock: RunTime): PoolSetup {
  return { ...pool, keys: pool.keys.map((key, i) => ({ ...key, limits: keyLimits(flags, pool.accounts[i]!, clock) })) };
}
