import { randomBytes } from 'node:crypto';
import type { ResolvedOptions, Scope, SimLimits } from './options.js';
import { SlidingWindow } from './sliding-window.js';

export const KEY_PREFIX = 'gbk_';

export interface SimAccount {
  id: string;
  /** Purchased credits; `subscriptionCredits` are spent first. */
  purchasedCredits: number;
  subscriptionCredits: number;
  suspended: boolean;
  apiDisabled: boolean;
  eligible: boolean;
  /** Times of blocked submissions, for the trailing-7-day eligibility rule. */
  blockedAt: number[];
}

export interface SimKey {
  token: string;
  label: string;
  account: SimAccount;
  scopes: Scope[];
  dailyCap: number;
  /** The simulator's limits with this key's own in place. */
  limits: SimLimits;
  revoked: boolean;
  /** Requests after which the operator revokes the key (none: never). */
  revokeAfterRequests: number | undefined;
  /** Requests the key has made (refused ones too). */
  requests: number;
  createdAt: number;
  /** Gross credits charged per key day (day index → credits). */
  chargedByDay: Map<number, number>;
  submissions: SlidingWindow;
  reads: SlidingWindow;
  uploadGrants: SlidingWindow;
}

export class Accounts {
  readonly keys = new Map<string, SimKey>();
  readonly accounts = new Map<string, SimAccount>();

  constructor(private readonly options: ResolvedOptions) {
    for (const k of options.keys) this.addKey(k);
  }

  addKey(k: ResolvedOptions['keys'][number]): SimKey {
    const accountId = k.account ?? 'main';
    let account = this.accounts.get(accountId);
    if (!account) {
      account = {
        id: accountId,
        purchasedCredits: this.options.credits,
        subscriptionCredits: this.options.subscriptionCredits,
        suspended: this.options.accountState === 'suspended',
        apiDisabled: this.options.accountState === 'api-disabled',
        eligible: this.options.accountState !== 'not-eligible',
        blockedAt: [],
      };
      this.accounts.set(accountId, account);
    }
    const { windowMs } = this.options;
    const limits = { ...this.options.limits, ...k.limits };
    const key: SimKey = {
      token: k.key ?? KEY_PREFIX + randomBytes(24).toString('base64url'),
      label: k.label,
      account,
      scopes: k.scopes ?? ['image', 'video'],
      dailyCap: k.dailyCap ?? 20_000,
      limits,
      revoked: false,
      revokeAfterRequests: k.revokeAfterRequests,
      requests: 0,
      createdAt: this.options.clock.now(),
      chargedByDay: new Map(),
      submissions: new SlidingWindow(limits.submissionsPerWindow, windowMs),
      reads: new SlidingWindow(limits.readsPerWindow, windowMs),
      uploadGrants: new SlidingWindow(limits.uploadGrantsPerWindow, windowMs),
    };
    this.keys.set(key.token, key);
    return key;
  }

  byLabel(label: string): SimKey {
    for (const key of this.keys.values()) if (key.label === label) return key;
    throw new Error(`no simulator key labelled ${label}`);
  }

  /** The account's key a request presents, revoked or not: the service refuses a revoked one, its ledger still names it. */
  presented(authorization: string | undefined): SimKey | undefined {
    const match = /^Bearer\s+(\S+)$/i.exec(authorization ?? '');
    return match ? this.keys.get(match[1]!) : undefined;
  }

  /** One more request with `key`: past its revokeAfterRequests, the operator revokes it. */
  countRequest(key: SimKey): void {
    key.requests++;
    if (key.revokeAfterRequests !== undefined && key.requests > key.revokeAfterRequests) key.revoked = true;
  }

  balance(account: SimAccount): number {
    return account.purchasedCredits + account.subscriptionCredits;
  }

  charge(account: SimAccount, credits: number): void {
    const fromSubscription = Math.min(account.subscriptionCredits, credits);
    account.subscriptionCredits -= fromSubscription;
    account.purchasedCredits -= credits - fromSubscription;
  }

  refund(account: SimAccount, credits: number): void {
    account.purchasedCredits += credits;
  }

  dayIndex(at: number): number {
    return Math.floor(at / this.options.dayMs);
  }

  chargedToday(key: SimKey, now: number): number {
    return key.chargedByDay.get(this.dayIndex(now)) ?? 0;
  }

  msUntilNextDay(now: number): number {
    return (this.dayIndex(now) + 1) * this.options.dayMs - now;
  }

  recordDailyCharge(key: SimKey, now: number, credits: number): void {
    const day = this.dayIndex(now);
    key.chargedByDay.set(day, (key.chargedByDay.get(day) ?? 0) + credits);
  }

  blockedInWindow(account: SimAccount, now: number): number {
    const since = now - this.options.moderationWindowMs;
    account.blockedAt = account.blockedAt.filter((t) => t > since);
    return account.blockedAt.length;
  }
}
