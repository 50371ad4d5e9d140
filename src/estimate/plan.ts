import { TYPICAL_SECONDS } from './duration.js';

/** One key as the plan fills its days. */
export interface PlanKey {
  /** Its fingerprint, as status and the run's line name it. */
  key: string;
  /** Credits a key day allows. */
  cap: number;
  /** The service's time between two of its submissions at its rate (its window over its count). */
  submitEveryMs: number;
  /** Its in-flight slots per type. */
  slots: { image: number; video: number };
  /** Credits already charged on it today: the first day has that much less room. */
  usedToday?: number | undefined;
}

/** One item as the plan places it: its type, its price (undefined: not placed) and its priority. */
export interface PlanItem {
  /** Named when it cannot be placed. */
  id?: string;
  type: 'image' | 'video';
  credits: number | undefined;
  priority: number;
}

export interface DayPlan {
  /** 1 is the day the run starts. */
  day: number;
  keys: { key: string; items: number; credits: number }[];
}

export interface Plan {
  days: DayPlan[];
  /** The day the last item is sent (0 when none is). */
  endsOnDay: number;
  /** Items no key day can take (a price over every cap) or that have no price. */
  notPlaced: number;
  /** The ids of those no key day can take or that have no price (the few a plan past its last day leaves are only counted). */
  notPlacedIds: string[];
}

type JobType = 'image' | 'video';
const DAY_MS = 86_400_000;
/** Never more days than this: a plan that would need them says how many items it left. */
const MAX_DAYS = 3_650;
/** As far past an item that does not fit as the runner looks for one that does. */
const LOOKAHEAD = 1_024;
/** A job's slot is held for the spec's typical duration. */
const JOB_MS = {
  image: ((TYPICAL_SECONDS.image[0] + TYPICAL_SECONDS.image[1]) / 2) * 1000,
  video: ((TYPICAL_SECONDS.video[0] + TYPICAL_SECONDS.video[1]) / 2) * 1000,
};

/** The items of one type still to send, in their order. */
class Queue {
  private head = 0;
  private readonly taken: boolean[];

  constructor(private readonly credits: readonly number[]) {
    this.taken = credits.map(() => false);
  }

  get left(): boolean {
    this.skipTaken();
    return this.head < this.credits.length;
  }

  /** The first item (within the look-ahead) that fits `room`, taken; its credits, or undefined. */
  take(room: number): number | undefined {
    this.skipTaken();
    for (let i = this.head, seen = 0; i < this.credits.length && seen < LOOKAHEAD; i++) {
      if (this.taken[i]) continue;
      seen++;
      if (this.credits[i]! > room) continue;
      this.taken[i] = true;
      return this.credits[i]!;
    }
    return undefined;
  }

  /** Whether any item left fits `room` (the day can take more of this type). */
  fits(room: number): boolean {
    this.skipTaken();
    for (let i = this.head, seen = 0; i < this.credits.length && seen < LOOKAHEAD; i++) {
      if (this.taken[i]) continue;
      seen++;
      if (this.credits[i]! <= room) return true;
    }
    return false;
  }

  private skipTaken(): void {
    while (this.head < this.credits.length && this.taken[this.head]) this.head++;
  }
}

/** One key while the plan runs: its next turn, its room today, its slots and what it placed. */
interface KeyState {
  plan: PlanKey;
  next: number;
  /** The day `room` is of. */
  day: number;
  room: number;
  /** When each slot is free again: its task then waits for a turn at the window behind those freed before it. */
  busyUntil: Record<JobType, number[]>;
}

/**
 * The run's key days as the runner fills them: images and videos each in
 * their order (higher priority first, then the manifest's), fed by two loops
 * that take turns at the key's submission rate while their slots (held for
 * the spec's typical job durations) are free; an item that fits no key today
 * waits while smaller ones after it go. A key's day ends when its cap leaves
 * room for nothing that is left.
 */
export function planDays(items: readonly PlanItem[], keys: readonly PlanKey[]): Plan {
  const largestCap = Math.max(0, ...keys.map((k) => k.cap));
  const placeable = items
    .map((item, seq) => ({ ...item, seq }))
    .filter((i): i is PlanItem & { credits: number; seq: number } => i.credits !== undefined && i.credits <= largestCap)
    .sort((a, b) => b.priority - a.priority || a.seq - b.seq);
  const queues: Record<JobType, Queue> = {
    image: new Queue(placeable.filter((i) => i.type === 'image').map((i) => i.credits)),
    video: new Queue(placeable.filter((i) => i.type === 'video').map((i) => i.credits)),
  };
  const states: KeyState[] = keys.map((plan) => ({
    plan,
    next: 0,
    day: 0,
    room: plan.cap - (plan.usedToday ?? 0),
    busyUntil: { image: Array(plan.slots.image).fill(0), video: Array(plan.slots.video).fill(0) },
  }));
  const days: DayPlan[] = [];
  let day = 0;
  while ((queues.image.left || queues.video.left) && day < MAX_DAYS && states.length > 0) {
    const k = states.reduce((a, b) => (b.next < a.next ? b : a));
    const today = Math.floor(k.next / DAY_MS);
    while (day <= today) days.push({ day: ++day, keys: keys.map((p) => ({ key: p.key, items: 0, credits: 0 })) });
    turn(k, queues, days[today]!.keys[states.indexOf(k)]!);
  }
  const endsOnDay = days.findLast((d) => d.keys.some((k) => k.items > 0))?.day ?? 0;
  const left = queues.image.left || queues.video.left ? placeable.length - placed(days) : 0;
  const placeableSeqs = new Set(placeable.map((i) => i.seq));
  const notPlacedIds = items.flatMap((item, seq) => (placeableSeqs.has(seq) || item.id === undefined ? [] : [item.id]));
  return {
    days: days.slice(0, endsOnDay),
    endsOnDay,
    notPlaced: items.length - placeable.length + left,
    notPlacedIds,
  };
}

/** One turn of a key at its next moment: an item sent, or the wait for a slot or for the next day. */
function turn(k: KeyState, queues: Record<JobType, Queue>, tally: DayPlan['keys'][number]): void {
  const now = k.next;
  const day = Math.floor(now / DAY_MS);
  if (day !== k.day) {
    k.day = day;
    k.room = k.plan.cap;
  }
  // The window serves the tasks in the order their slots freed (images first when together, as the loops start).
  const free = (['image', 'video'] as const)
    .flatMap((type) => k.busyUntil[type].map((until, slot) => ({ type, slot, until })))
    .filter((s) => s.until <= now)
    .sort((a, b) => a.until - b.until || (a.type === b.type ? 0 : a.type === 'image' ? -1 : 1));
  for (const { type, slot } of free) {
    const credits = queues[type].take(k.room);
    if (credits === undefined) continue;
    k.room -= credits;
    k.busyUntil[type][slot] = now + JOB_MS[type];
    tally.items++;
    tally.credits += credits;
    k.next = now + k.plan.submitEveryMs;
    return;
  }
  // Nothing went: a slot of a type that has an item fitting today frees, or the day is done for this key.
  const waiting = (['image', 'video'] as const).filter((t) => queues[t].fits(k.room));
  const nextDay = (day + 1) * DAY_MS;
  const frees = Math.min(...waiting.flatMap((t) => k.busyUntil[t].filter((u) => u > now)));
  k.next = waiting.length > 0 && Number.isFinite(frees) ? Math.min(frees, nextDay) : nextDay;
}

function placed(days: readonly DayPlan[]): number {
  return days.reduce((n, d) => n + d.keys.reduce((m, k) => m + k.items, 0), 0);
}
