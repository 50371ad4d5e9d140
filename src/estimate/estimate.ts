import type { Catalog } from '../api/catalog.js';
import type { Manifest, ResolvedItem } from '../manifest/index.js';
import type { KeyLimits } from '../scheduler/limits.js';
import { dependenciesOf, gatesOf } from '../manifest/types.js';
import { estimateDuration, longestChainSeconds, type Bound } from './duration.js';
import { planDays, type Plan, type PlanKey } from './plan.js';
import { priceOf, type PriceSource } from './prices.js';

export interface ModelCost {
  model: string;
  type: 'image' | 'video';
  items: number;
  /** Credits of the priced items. */
  credits: number;
  /** Items whose price is unknown (not in the catalog, nor in the manifest's prices). */
  unpriced: number;
  /** Price per job when all are equal. */
  each?: number;
  source: PriceSource | 'mixed';
}

export interface Estimate {
  items: { total: number; image: number; video: number };
  models: ModelCost[];
  credits: { total: number; unpricedItems: number; complete: boolean };
  balance?: { credits: number; enough: boolean };
  /** The cap of every key together, the largest one key's (a job above it can be sent by no key), and the key days the manifest needs. */
  dailyCap: { credits: number; largestKey: number; keys: number; keyDays: number };
  budget?: { maxCredits: number; within: boolean; itemsWithin: number };
  duration: { seconds: number; limitedBy: Bound };
  /** The highest price of one job: above the daily cap, that job can never be submitted. */
  maxJobCredits: number;
  /** Items and credits per tag (of the items that have tags), with the tag's budget where it has one. */
  tags: TagCost[];
  /**
   * Of the totals, what is paid only once a person approved a gate: the gated items and those made from them,
   * each counted once. The rest is spent now.
   */
  gated: {
    items: number;
    credits: number;
    unpriced: number;
    /**
     * Of the gated, those an approval timeout approves by itself (`onTimeout: approve` on every gate before them):
     * spent once the timeout passes unless someone rejects in time.
     */
    byTimeout: { items: number; credits: number };
  };
  /** Day by day, per key: the items and credits each key day takes, and the day the run ends. */
  plan?: Plan;
}

export interface TagCost {
  tag: string;
  items: number;
  credits: number;
  unpriced: number;
  budget?: number;
  /** Of them, the gated (see Estimate.gated). */
  gated: { items: number; credits: number };
}

export interface EstimateInput {
  items: readonly ResolvedItem[];
  catalog: Catalog;
  prices: Manifest['prices'];
  /** The limits of every key together (one key: its own). */
  limits: KeyLimits;
  /** Each key's daily cap, with several keys. */
  keyCaps?: readonly number[];
  balance?: number;
  maxCredits?: number;
  /** `budget.perTag`: a tag's credits against its budget. */
  perTag?: Readonly<Record<string, number>> | undefined;
  /** The service's time runs this much faster than real time (a time-scaled simulator): the duration is said in real time. */
  timeScale?: number;
  /** The keys whose days the plan fills (none: no plan). */
  planKeys?: readonly PlanKey[] | undefined;
  /** The items that wait for a decision now (a run's state says): gated with what is made from them. Default: every item with gates. */
  waiting?: ReadonlySet<string> | undefined;
}

type ModelTally = ModelCost & { prices: Set<number>; sources: Set<PriceSource> };

/** The manifest's items priced and counted: per model, in total, and how many fit the budget in manifest order. */
function tally(input: EstimateInput) {
  const byModel = new Map<string, ModelTally>();
  const byTag = new Map<string, TagCost>();
  const sums = { total: 0, unpricedItems: 0, itemsWithin: 0, maxJobCredits: 0, budgetBroken: false };
  const counts = { image: 0, video: 0 };
  const behindGates = gatedIds(input.items, input.waiting);
  const byTimeout = approvedByTimeout(input.items, behindGates);
  const gated = { items: 0, credits: 0, unpriced: 0, byTimeout: { items: 0, credits: 0 } };
  for (const item of input.items) {
    counts[item.type]++;
    const price = priceOf(item, input.catalog.get(item.type, item.model), input.prices);
    const isGated = behindGates.has(item.id);
    tallyTags(byTag, item.tags, price.credits, isGated);
    if (isGated) {
      gated.items++;
      if (price.credits === undefined) gated.unpriced++;
      else gated.credits += price.credits;
      if (byTimeout.has(item.id)) {
        gated.byTimeout.items++;
        gated.byTimeout.credits += price.credits ?? 0;
      }
    }
    const key = `${item.type}:${item.model}`;
    let model = byModel.get(key);
    if (!model) {
      const empty = { items: 0, credits: 0, unpriced: 0, prices: new Set<number>(), sources: new Set<PriceSource>() };
      model = { model: item.model, type: item.type, source: price.source, ...empty };
      byModel.set(key, model);
    }
    model.items++;
    model.sources.add(price.source);
    if (price.credits === undefined) {
      model.unpriced++;
      sums.unpricedItems++;
      continue;
    }
    model.credits += price.credits;
    sums.maxJobCredits = Math.max(sums.maxJobCredits, price.credits);
    model.prices.add(price.credits);
    sums.total += price.credits;
    if (input.maxCredits !== undefined && !sums.budgetBroken) {
      if (sums.total <= input.maxCredits) sums.itemsWithin++;
      else sums.budgetBroken = true;
    }
  }
  return { byModel, byTag, counts, gated, ...sums };
}

/** The items a person's decision stands before: those with gates, and those made from them, however far down. */
function gatedIds(items: readonly ResolvedItem[], waiting: ReadonlySet<string> | undefined): Set<string> {
  const gated = new Set<string>();
  const dependents = new Map<string, string[]>();
  for (const item of items) {
    if (waiting ? waiting.has(item.id) : gatesOf(item).length) gated.add(item.id);
    for (const dep of dependenciesOf(item)) {
      let list = dependents.get(dep.id);
      if (!list) dependents.set(dep.id, (list = []));
      list.push(item.id);
    }
  }
  if (gated.size === 0) return gated;
  const next = [...gated];
  while (next.length) {
    for (const id of dependents.get(next.pop()!) ?? []) {
      if (gated.has(id)) continue;
      gated.add(id);
      next.push(id);
    }
  }
  return gated;
}

/**
 * Of the items behind gates, those no person need approve: every gate before them (however far up) is approved by
 * its approval timeout. An item made from such items only is so too.
 */
function approvedByTimeout(items: readonly ResolvedItem[], behindGates: ReadonlySet<string>): Set<string> {
  const byId = new Map(items.map((i) => [i.id, i]));
  const known = new Map<string, boolean>();
  const auto = (id: string, seen: Set<string>): boolean => {
    const done = known.get(id);
    if (done !== undefined) return done;
    const item = byId.get(id);
    // Not behind a gate: nothing to decide. A cycle (refused by validation) or an unknown id decides nothing.
    if (!item || !behindGates.has(id)) return true;
    if (seen.has(id)) return false;
    seen.add(id);
    const gates = gatesOf(item);
    const answer =
      gates.every((g) => byId.get(g)?.approval?.onTimeout === 'approve' && auto(g, seen)) &&
      dependenciesOf(item).every((d) => auto(d.id, seen));
    known.set(id, answer);
    return answer;
  };
  return new Set([...behindGates].filter((id) => auto(id, new Set())));
}

/** The day-by-day plan of the manifest's items over the keys' days. */
function planOf(input: EstimateInput, keys: readonly PlanKey[]): Plan {
  const items = input.items.map((item) => ({
    id: item.id,
    type: item.type,
    credits: priceOf(item, input.catalog.get(item.type, item.model), input.prices).credits,
    priority: item.priority ?? 0,
  }));
  return planDays(items, keys);
}

/** An item's price counted in each of its tags. */
function tallyTags(
  byTag: Map<string, TagCost>,
  tags: readonly string[] | undefined,
  credits: number | undefined,
  gated: boolean,
): void {
  for (const tag of tags ?? []) {
    let t = byTag.get(tag);
    if (!t) byTag.set(tag, (t = { tag, items: 0, credits: 0, unpriced: 0, gated: { items: 0, credits: 0 } }));
    t.items++;
    if (credits === undefined) t.unpriced++;
    else t.credits += credits;
    if (!gated) continue;
    t.gated.items++;
    t.gated.credits += credits ?? 0;
  }
}

/** A dry run: what the manifest costs and how long it takes, from the catalog, the account and the limits. */
export function estimate(input: EstimateInput): Estimate {
  const { byModel, byTag, counts, gated, total, unpricedItems, itemsWithin, maxJobCredits } = tally(input);
  const tags = [...byTag.values()]
    .map((t) => (input.perTag?.[t.tag] !== undefined ? { ...t, budget: input.perTag[t.tag]! } : t))
    .sort((a, b) => a.tag.localeCompare(b.tag));
  const models = [...byModel.values()].map(({ prices, sources, ...cost }) => ({
    ...cost,
    ...(prices.size === 1 ? { each: [...prices][0]! } : {}),
    source: sources.size === 1 ? [...sources][0]! : ('mixed' as const),
  }));
  const chainSeconds = longestChainSeconds(
    input.items.map((i) => ({ id: i.id, type: i.type, deps: dependenciesOf(i).map((d) => d.id) })),
  );
  // With keys to plan, the key days are the plan's: items do not pack a day to its last credit.
  const plan = input.planKeys?.length ? planOf(input, input.planKeys) : undefined;
  const planned = plan && plan.endsOnDay > 0 ? { keyDays: plan.endsOnDay } : {};
  const duration = estimateDuration(
    { images: counts.image, videos: counts.video, credits: total, chainSeconds, ...planned },
    input.limits,
  );
  return {
    items: { total: input.items.length, ...counts },
    models: models.sort((a, b) => b.credits - a.credits || a.model.localeCompare(b.model)),
    credits: { total, unpricedItems, complete: unpricedItems === 0 },
    ...(input.balance !== undefined ? { balance: { credits: input.balance, enough: input.balance >= total } } : {}),
    dailyCap: {
      credits: input.limits.dailyCap,
      largestKey: Math.max(...(input.keyCaps ?? [input.limits.dailyCap])),
      keys: input.keyCaps?.length ?? 1,
      keyDays: duration.keyDays,
    },
    ...(input.maxCredits !== undefined
      ? { budget: { maxCredits: input.maxCredits, within: total <= input.maxCredits, itemsWithin } }
      : {}),
    duration: { seconds: Math.round(duration.seconds / (input.timeScale ?? 1)), limitedBy: duration.limitedBy },
    maxJobCredits,
    tags,
    gated,
    ...(plan ? { plan } : {}),
  };
}

/** What makes a run impossible as planned: each with what to do. Empty when the run can go as planned. */
export function blockers(
  e: Estimate,
  spent = 0,
): { reason: 'balance' | 'budget' | 'tag-budget' | 'daily-cap'; message: string }[] {
  const out: ReturnType<typeof blockers> = [];
  const n = (x: number) => x.toLocaleString('en-US');
  if (e.balance && !e.balance.enough)
    out.push({
      reason: 'balance',
      message: `the balance (${n(e.balance.credits)} credits) is short by ${n(e.credits.total - e.balance.credits)}: top up, or the run stops when the credits run out`,
    });
  if (e.budget && spent + e.credits.total > e.budget.maxCredits) {
    out.push({
      reason: 'budget',
      message: `the budget of ${n(e.budget.maxCredits)} credits is short by ${n(spent + e.credits.total - e.budget.maxCredits)}${spent ? ` (${n(spent)} already charged net)` : ''}: raise it (--max-credits or budget.maxCredits), or the run stops at it`,
    });
  }
  for (const t of e.tags)
    if (t.budget !== undefined && t.credits > t.budget)
      out.push({
        reason: 'tag-budget',
        message: `tag ${t.tag} needs ${n(t.credits)} credits, over its budget of ${n(t.budget)}: its items stop there (the others run); raise budget.perTag`,
      });
  if (e.maxJobCredits > e.dailyCap.largestKey)
    out.push({
      reason: 'daily-cap',
      message: `a job of ${n(e.maxJobCredits)} credits is over the daily cap of ${n(e.dailyCap.largestKey)}: it can never be submitted on ${e.dailyCap.keys > 1 ? 'any key' : 'this key'}`,
    });
  return out;
}
