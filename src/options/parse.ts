import { InvalidArgumentError } from 'commander';
import { parseRate, type Rate } from '../scheduler/limits.js';
import type { OutageMode, ScheduledOutage } from '../simulator/index.js';

const OUTAGE_MODES: readonly OutageMode[] = ['refuse', 'reset', 'hang', 'blackhole'];

/** commander argument parsers with messages that say what was expected. */
export function nonNegativeNumber(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0)
    throw new InvalidArgumentError(`expected a number >= 0, got "${value}"`);
  return n;
}

/** How many items a canary runs: a count, or a share of them. */
export type CanarySize = { count: number } | { percent: number };

/** `--canary`: a count of items (`50`) or a share of them (`1%`, `0.5%`). */
export function canarySize(value: string): CanarySize {
  const percent = /^\s*(\d+(?:\.\d+)?)\s*%\s*$/.exec(value);
  if (percent) {
    const p = Number(percent[1]);
    if (p > 0 && p <= 100) return { percent: p };
  } else if (/^\s*\d+\s*$/.test(value) && Number(value) >= 1) return { count: Number(value) };
  throw new InvalidArgumentError(
    `expected a number of items (such as 20) or a percentage (such as 1%), got "${value}"`,
  );
}

/** How many keys a simulated account holds: the service allows an account up to 5. */
export function keyCount(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 5)
    throw new InvalidArgumentError(`expected a whole number of keys from 1 to 5, got "${value}"`);
  return n;
}

export function positiveNumber(value: string): number {
  const n = nonNegativeNumber(value);
  if (n === 0) throw new InvalidArgumentError(`expected a number > 0, got "${value}"`);
  return n;
}

export function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new InvalidArgumentError(`expected a port from 0 to 65535, got "${value}"`);
  return n;
}

export function probability(value: string): number {
  const n = nonNegativeNumber(value);
  if (n > 1) throw new InvalidArgumentError(`expected a probability from 0 to 1, got "${value}"`);
  return n;
}

/** "N" or "MIN-MAX". */
export function range(value: string): [number, number] {
  const parts = value.split('-');
  const [min, max] =
    parts.length === 1 ? [parts[0]!, parts[0]!] : parts.length === 2 ? [parts[0]!, parts[1]!] : ['', ''];
  const a = Number(min);
  const b = Number(max);
  if (min.trim() === '' || max.trim() === '' || !Number.isFinite(a) || !Number.isFinite(b) || a < 0 || b < a) {
    throw new InvalidArgumentError(`expected N or MIN-MAX with 0 <= MIN <= MAX, got "${value}"`);
  }
  return [a, b];
}

/** "CHARGE:SECONDS[:MODE]", repeatable: an outage of the simulator at its CHARGE-th charge (whose answer is lost), for SECONDS of real time. */
export function outage(value: string, earlier: ScheduledOutage[] = []): ScheduledOutage[] {
  const [charge, seconds, mode = 'refuse', ...rest] = value.split(':');
  const atCharge = Number(charge);
  const length = Number(seconds);
  if (
    rest.length ||
    !Number.isInteger(atCharge) ||
    atCharge < 1 ||
    !(length > 0) ||
    !OUTAGE_MODES.includes(mode as OutageMode)
  ) {
    throw new InvalidArgumentError(
      `expected CHARGE:SECONDS[:${OUTAGE_MODES.join('|')}] (e.g. 10:20 or 5:3:reset), got "${value}"`,
    );
  }
  return [...earlier, { atCharge, seconds: length, mode: mode as OutageMode }];
}

/** A real key's daily cap: the spec's default of 20,000 is its most; it "can be set lower". */
export function keyDailyCap(value: string): number {
  const n = positiveInt(value);
  if (n > 20_000)
    throw new InvalidArgumentError(
      `a key's daily cap is at most 20,000 credits (the spec's default, which can only be set lower); got ${value}`,
    );
  return n;
}

type Scopes = ('image' | 'video')[];

/** "image", "video" or "image,video": one key's scopes; repeatable, one per key in order (one given alone is every key's). */
export function scopes(value: string, earlier: Scopes[] = []): Scopes[] {
  const list = value.split(',').map((s) => s.trim());
  if (list.length === 0 || list.some((s) => s !== 'image' && s !== 'video') || new Set(list).size !== list.length) {
    throw new InvalidArgumentError(`expected image, video or image,video; got "${value}"`);
  }
  return [...earlier, list as Scopes];
}

/** "REQUESTS" or "REQUESTS:KEY" (KEY from 1): the operator revokes that key (the first by default) after that many requests; repeatable. */
export function revokeAfter(
  value: string,
  earlier: { requests: number; key: number }[] = [],
): { requests: number; key: number }[] {
  const [requests, key = '1', ...rest] = value.split(':');
  const n = Number(requests);
  const k = Number(key);
  if (rest.length || !Number.isInteger(n) || n < 0 || !Number.isInteger(k) || k < 1 || k > 5)
    throw new InvalidArgumentError(`expected REQUESTS or REQUESTS:KEY (KEY 1 to 5), e.g. 20 or 20:2; got "${value}"`);
  return [...earlier, { requests: n, key: k }];
}

export function accountState(value: string): 'ok' | 'not-eligible' | 'api-disabled' | 'suspended' {
  if (!['ok', 'not-eligible', 'api-disabled', 'suspended'].includes(value))
    throw new InvalidArgumentError(`expected ok, not-eligible, api-disabled or suspended; got "${value}"`);
  return value as 'ok' | 'not-eligible' | 'api-disabled' | 'suspended';
}

export function jobVisibility(value: string): 'account' | 'key' {
  if (value !== 'account' && value !== 'key') throw new InvalidArgumentError(`expected account or key; got "${value}"`);
  return value;
}

export function mediaType(value: string): 'image' | 'video' {
  if (value !== 'image' && value !== 'video') throw new InvalidArgumentError(`expected image or video, got "${value}"`);
  return value;
}

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!/^\s*\d+\s*$/.test(value) || n < 1)
    throw new InvalidArgumentError(`expected a whole number >= 1, got "${value}"`);
  return n;
}

export function rate(value: string): Rate {
  try {
    return parseRate(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

export function nonNegativeInt(value: string): number {
  if (!/^\s*\d+\s*$/.test(value)) throw new InvalidArgumentError(`expected a whole number >= 0, got "${value}"`);
  return Number(value);
}

export function pollWait(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 30)
    throw new InvalidArgumentError(
      `expected whole seconds from 1 to 30 (the service's long-poll limit), got "${value}"`,
    );
  return n;
}

export function maxBlocked(value: string): number {
  const n = positiveInt(value);
  if (n >= 30) throw new InvalidArgumentError(`expected fewer than 30 (the service's threshold), got "${value}"`);
  return n;
}
