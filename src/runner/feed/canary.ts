import { ENDED_WITHOUT_OUTPUT, type ItemState, type Store } from '../../store/index.js';
import type { Control } from '../core/control.js';
import type { CanarySize } from '../../options/parse.js';
import type { Feeder } from './feeder.js';

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
  const candidates = store.queue.canaryCandidates();
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

/**
 * Runs the canary's items alone, to their end (`drain` runs whatever the
 * feeder hands out); false (the run stopped) when they fail more than
 * allowed. A canary that passed, in this run or an earlier one, is not run
 * again; one that failed is judged again from its items' states (retry or
 * edit them first), never chosen anew.
 */
export async function runCanary(
  store: Store,
  control: Control,
  feeder: Feeder,
  opts: { size: CanarySize; maxFailures: number },
  drain: () => Promise<void>,
): Promise<boolean> {
  const earlier = canaryRecord(store);
  if (earlier?.passed) return true;
  const ids = earlier?.ids ?? chooseCanary(store, opts.size);
  if (!earlier) saveCanary(store, { ids, passed: false });
  const models = [...new Set(ids.map((id) => store.items.get(id)!.model))].join(', ');
  control.emit({
    kind: 'notice',
    message: `canary: ${ids.length} item${ids.length === 1 ? '' : 's'} first (${models}); the rest only if they pass`,
  });
  feeder.restrictTo(ids);
  await drain();
  feeder.restrictTo(undefined);
  if (control.isStopping()) return false;
  const verdict = judgeCanary(store, ids, opts.maxFailures);
  if (verdict.passed) {
    saveCanary(store, { ids, passed: true });
    control.emit({
      kind: 'notice',
      message: `canary passed (${verdict.failed.length} of ${ids.length} failed, ${verdict.credits} credits): running the rest`,
    });
    return true;
  }
  const failures = verdict.failed
    .slice(0, 5)
    .map((f) => `${f.id} ${f.state}${f.code ? ` ${f.code}` : ''}${f.message ? `: ${f.message}` : ''}`);
  const unfinished = verdict.unfinished.length
    ? `; ${verdict.unfinished.length} did not finish (${verdict.unfinished.slice(0, 5).join(', ')})`
    : '';
  control.stop(
    'canary',
    `the canary failed: ${verdict.failed.length} of ${ids.length} items failed or were blocked (at most ${opts.maxFailures} allowed)${unfinished}. It cost ${verdict.credits} credits; nothing else was submitted.\n  ${failures.join('\n  ')}\nFix the manifest (or genbatch retry), then run the same command: the canary's items are judged again, and the rest run once they pass.`,
  );
  return false;
}
