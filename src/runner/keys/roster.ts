import type { ItemRow, Store } from '../../store/index.js';
import type { Control } from '../core/control.js';
import { keyRefusedNote, type JobType, type KeyLane, type KeyLanes } from './lanes.js';

/** Whose refusal it was (the policy's reaction): the account's, or the key's; and what the user can do. */
export interface RefusalScope {
  readonly scope?: string | undefined;
  readonly hint: string;
}

/**
 * Which key each item's attempt belongs to, and what becomes of the items of
 * a key the run lacks or the service refuses: never sent, another key makes
 * them anew; sent, they wait for their key (they may have been accepted).
 */
export class KeyRoster {
  /** Fingerprints of keys this run lacks → the items that wait for each. */
  private readonly missing = new Map<string, Set<string>>();

  constructor(
    private readonly lanes: KeyLanes,
    private readonly store: Store,
    /** Whether a task of this run holds the item: its task settles it when it ends. */
    private readonly heldByTask: (itemId: string) => boolean,
    private readonly control: Control,
    private readonly now: () => number,
  ) {}

  /**
   * The lane of an item's attempt: the key it belongs to. An attempt of a key
   * this run lacks is left for a run with that key (resent with another it
   * could be charged again, and another key cannot read its job), unless it
   * was never sent: then another key makes it anew. Attempts from before keys
   * were recorded go with the first key, as they did then.
   */
  laneOf(item: Pick<ItemRow, 'id' | 'state'>): KeyLane | undefined {
    const { store } = this;
    const attempt = store.attempts.latest(item.id);
    if (!attempt?.key_fp) return this.lanes.all[0];
    const lane = this.lanes.get(attempt.key_fp);
    if (lane) return lane;
    if (item.state === 'queued' && attempt.sent_at === null) {
      store.lifecycle.requeue(item.id, this.now());
      return undefined;
    }
    const message = `sent with the API key whose fingerprint is ${attempt.key_fp}, which this run does not have: it is neither resent nor read with another key (that could pay twice). Run again with that key in GENBATCH_API_KEY or GENBATCH_API_KEYS`;
    store.lifecycle.heldForKey(item.id, attempt.n, item.state, { code: 'KEY_MISSING', message }, this.now());
    // A submitting item held here is maybe_accepted when recover reaches that state: counted once.
    const waiting = this.missing.get(attempt.key_fp) ?? new Set<string>();
    this.missing.set(attempt.key_fp, waiting.add(item.id));
    return undefined;
  }

  /** The lane that reads a job: its attempt's key, or the first key for an attempt from before keys were recorded. */
  laneOfJob(itemId: string): KeyLane | undefined {
    const fp = this.store.attempts.latest(itemId)?.key_fp;
    return fp ? this.lanes.get(fp) : this.lanes.all[0];
  }

  /**
   * The one answer to a refusal of the service's: a refused account stops the
   * run, a refused key leaves it (see `refused`).
   */
  answerRefusal(lane: KeyLane, error: { code: string; message: string }, refusal: RefusalScope): void {
    if (refusal.scope === 'account')
      this.control.askStop('refused', `${error.code}: ${error.message}\n${refusal.hint}`);
    else this.refused(lane, error, refusal.hint);
  }

  /**
   * The service refused a key (401, or a 403 code): it leaves the run, and
   * the other keys go on with what it had not sent. What it sent stays bound
   * to it, for a run in which it works again; the run stops when no key is left.
   */
  refused(lane: KeyLane, error: { code: string; message: string }, hint: string): void {
    if (!lane.leave(error.code, error.message)) return;
    const left = this.lanes.active.length;
    if (this.lanes.all.length > 1) {
      this.control.emit({
        kind: 'notice',
        message: `the key ${lane.fingerprint} was refused (${error.code}): it leaves the pool${left ? `; ${left} key${left === 1 ? '' : 's'} go on` : ''}. ${hint}`,
      });
    }
    for (const item of this.store.queue.boundTo(lane.fingerprint))
      if (!this.heldByTask(item.id)) this.settleForLeftKey(item.id, lane);
    if (left === 0) this.control.askStop('refused', `${error.code}: ${error.message}\n${hint}`);
    this.control.wake();
  }

  /**
   * An item whose key left the run, once no task holds it: never sent, another
   * key makes it anew; sent, it waits for that key (it may have been accepted).
   */
  settleForLeftKey(itemId: string, lane: KeyLane): void {
    const { store } = this;
    const item = store.items.get(itemId);
    const attempt = store.attempts.latest(itemId);
    if (!item || attempt?.key_fp !== lane.fingerprint) return;
    if (item.state === 'queued' && attempt.sent_at === null) store.lifecycle.requeue(itemId, this.now());
    else if (item.state === 'submitting')
      store.lifecycle.heldForKey(itemId, attempt.n, 'submitting', keyRefusedNote(lane, attempt), this.now());
  }

  /** No key that may submit this type is left (the others were refused): the run stops if items of it wait. */
  noKeyLeftFor(type: JobType): void {
    if (this.store.itemReports.workByType()[type].pending === 0) return;
    const refused = this.lanes.all.filter((l) => l.refused).map((l) => `${l.fingerprint}: ${l.refused!.code}`);
    this.control.askStop(
      'refused',
      `no key of the run may submit ${type}s any more (${refused.join(', ') || 'none has the scope'}); the ${type}s not yet submitted wait. Fix the keys, then run the same command again.`,
    );
  }

  /** The keys the run lacked, and those the service refused, with the items that wait for each. */
  summary(): {
    keysMissing: Record<string, number>;
    keysRefused: Record<string, { code: string; message: string; waiting: number }>;
  } {
    const waitingByKey = new Map(this.store.itemReports.openByKey().map((r) => [r.key_fp, r.n]));
    return {
      keysMissing: Object.fromEntries([...this.missing].map(([fp, ids]) => [fp, ids.size])),
      keysRefused: Object.fromEntries(
        this.lanes.all
          .filter((l) => l.refused)
          .map((l) => [l.fingerprint, { ...l.refused!, waiting: waitingByKey.get(l.fingerprint) ?? 0 }]),
      ),
    };
  }
}
