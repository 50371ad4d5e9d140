import { ENDED_WITHOUT_OUTPUT, type ItemState, type Store } from '../store/index.js';

/** How many items the canary runs: a count, or a share of the eligible items. */
export type CanarySize = { count: number } | { percent: number };

/** What a state remembers of its canary, so a resumed run neither repeats a passed one nor pays for a new one. */
export interface CanaryRecord {
  ids: string[];
  passed: boolean;
}

const META = 'canary';

export function canaryRecord(store: Store): CanaryRecord | undefined {
  const text = store.meta(META);
  return text === undefined ? undefined : (JSON.parse(text) as CanaryRecord);
}

export function saveCanary(store: Store, record: CanaryRecord): void {
  store.setMeta(META, JSON.stringify(record));
}

/**
 * The canary's items: pending items with nothing to wait for, taken in turn
 * from each type and model (in manifest order within each), so every model
 * of the manifest is tried before the bulk is paid for.
 */
export function chooseCanary(store: Store, size: CanarySize): string[] {
  const candidates = store.items.canaryCandidates();
  const wanted = 'count' in size ? size.count : Math.ceil((candidates.length * size.percent) / 100);
  const groups = new Map<string, string[]>();
  for (const c of candidates) {
    const key = `${c.type}\n${c.model}`;
    const group = groups.get(key);
    if (group) group.push(c.id);
    else groups.set(key, [c.id]);
  }
  const chosen: string[] = [];
  const queues = [...groups.values()];
  for (let i = 0; chosen.length < Math.min(wanted, candidates.length); i++) {
    for (const q of queues) if (i < q.length && chosen.length < wanted) chosen.push(q[i]!);
  }
  return chosen;
}

export interface CanaryVerdict {
  passed: boolean;
  failed: { id: string; state: string; code: string | null; message: string | null }[];
  /** Items that did not reach an end (held, or a download that could not finish). */
  unfinished: string[];
  /** Net credits the canary's items cost. */
  credits: number;
}

export function judgeCanary(store: Store, ids: readonly string[], maxFailures: number): CanaryVerdict {
  const failed: CanaryVerdict['failed'] = [];
  const unfinished: string[] = [];
  let credits = 0;
  for (const id of ids) {
    const item = store.items.get(id);
    if (!item) continue;
    for (const a of store.attempts.ofItem(id)) credits += a.charged - a.refunded;
    if (item.state === 'done') continue;
    if ((ENDED_WITHOUT_OUTPUT as readonly ItemState[]).includes(item.state))
      failed.push({ id, state: item.state, code: item.error_code, message: item.error_message });
    else unfinished.push(id);
  }
  return { passed: failed.length <= maxFailures && unfinished.length === 0, failed, unfinished, credits };
}
