import { ENDED_WITHOUT_OUTPUT, type ItemState, type Store } from '../../store/index.js';
import type { Control, Stop } from '../core/control.js';
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

/** How far into a model's items the canary looks for one whose inputs are already in it. */
const LOOKAHEAD = 1_000;

/**
 * The canary's items: at least one of each type and model of the run (the
 * costly video included), then more in turn from each, up to its size; an
 * item comes after the pending items it waits for, which join the canary.
 * Within a model the first item in manifest order whose inputs are already
 * in the canary is taken, so a video made from a still is tried with it.
 */
export function chooseCanary(store: Store, size: CanarySize): string[] {
  const candidates = store.queue.canaryCandidates();
  const wanted = 'count' in size ? size.count : Math.ceil((candidates.length * size.percent) / 100);
  const byId = new Map(candidates.map((c) => [c.id, c]));
  const groups = new Map<string, string[]>();
  for (const c of candidates) {
    const key = `${c.type}\n${c.model}`;
    const group = groups.get(key);
    if (group) group.push(c.id);
    else groups.set(key, [c.id]);
  }
  const chosen = new Set<string>();
  // The item and what it waits for that is not chosen yet, inputs first.
  const needs = (id: string, out: string[] = []): string[] => {
    if (chosen.has(id) || out.includes(id)) return out;
    for (const dep of byId.get(id)?.waitsFor ?? []) needs(dep, out);
    out.push(id);
    return out;
  };
  const take = (group: string[]): boolean => {
    let best: string[] | undefined;
    for (const id of group.slice(0, LOOKAHEAD)) {
      if (chosen.has(id)) continue;
      const more = needs(id);
      if (!best || more.length < best.length) best = more;
      if (best.length === 1) break;
    }
    if (!best) return false;
    for (const id of best) chosen.add(id);
    return true;
  };
  const queues = [...groups.values()];
  // One of each model first, whatever the size: the canary is there to try every model before the bulk is paid for.
  for (const q of queues) take(q);
  for (let more = true; more && chosen.size < wanted; ) {
    more = false;
    for (const q of queues) if (chosen.size < wanted && take(q)) more = true;
  }
  return [...chosen];
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
 * feeder hands out): `passed`, `stopped` (the run stopped meanwhile, for
 * another reason), or why the run should stop (they failed more than
 * allowed). A canary that passed, in this run or an earlier one, is not run
 * again; one that failed is judged again from its items' states (retry or
 * edit them first), never chosen anew.
 */
export async function runCanary(
  store: Store,
  control: Control,
  feeder: Feeder,
  options: { size: CanarySize; maxFailures: number },
  drain: () => Promise<void>,
): Promise<'passed' | 'stopped' | Stop> {
  const earlier = canaryRecord(store);
  if (earlier?.passed) return 'passed';
  const ids = earlier?.ids ?? chooseCanary(store, options.size);
  if (!earlier) saveCanary(store, { ids, passed: false });
  const models = [...new Set(ids.map((id) => store.items.get(id)!.model))].join(', ');
  control.emit({
    kind: 'notice',
    message: `canary: ${ids.length} item${ids.length === 1 ? '' : 's'} first (${models}): ${listed(ids)}; the rest only if they pass`,
  });
  feeder.restrictTo(ids);
  await drain();
  feeder.restrictTo(undefined);
  if (control.isStopping()) return 'stopped';
  const verdict = judgeCanary(store, ids, options.maxFailures);
  if (verdict.passed) {
    saveCanary(store, { ids, passed: true });
    control.emit({
      kind: 'notice',
      message: `canary passed (${verdict.failed.length} of ${ids.length} failed, ${verdict.credits} credits): running the rest`,
    });
    return 'passed';
  }
  const failures = verdict.failed
    .slice(0, 5)
    .map((f) => `${f.id} ${f.state}${f.code ? ` ${f.code}` : ''}${f.message ? `: ${f.message}` : ''}`);
  const unfinished = verdict.unfinished.length
    ? `; ${verdict.unfinished.length} did not finish (${verdict.unfinished.slice(0, 5).join(', ')})`
    : '';
  return {
    kind: 'canary',
    message: `the canary failed: ${verdict.failed.length} of ${ids.length} items failed or were blocked (at most ${options.maxFailures} allowed)${unfinished}. It cost ${verdict.credits} credits; nothing else was submitted.\n  ${failures.join('\n  ')}\nFix the manifest (or genbatch retry), then run the same command: the canary's items are judged again, and the rest run once they pass.`,
  };
}

/** The first ids of a list, and how many more. */
function listed(ids: readonly string[], shown = 10): string {
  const more = ids.length - shown;
  return `${ids.slice(0, shown).join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
}
