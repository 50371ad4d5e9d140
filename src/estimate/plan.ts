/** One key as the plan fills its days. */
export interface PlanKey {
  /** Its fingerprint, as status and the run's line name it. */
  key: string;
  /** Credits a key day allows. */
  cap: number;
  /** Submissions a key day allows (its rate over a day). */
  submissionsPerDay: number;
  /** Credits already charged on it today: the first day has that much less room. */
  usedToday?: number | undefined;
}

/** One item as the plan places it: its price (undefined: not placed) and its priority. */
export interface PlanItem {
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
}

/** Never more days than this: a plan that would need them says how many items it left. */
const MAX_DAYS = 3_650;

/**
 * The run's key days, as the runner fills them: each day, the ready items in
 * their order (higher priority first, then the manifest's), each given to the
 * key with the most room left that can take it; an item that fits no key
 * today waits for the next day while smaller ones after it go first. A key
 * day ends when its cap or its rate is used up.
 */
export function planDays(items: readonly PlanItem[], keys: readonly PlanKey[]): Plan {
  const largestCap = Math.max(0, ...keys.map((k) => k.cap));
  const order = items
    .map((item, seq) => ({ ...item, seq }))
    .filter((i) => i.credits !== undefined && i.credits <= largestCap)
    .sort((a, b) => b.priority - a.priority || a.seq - b.seq);
  const notPlaced = items.length - order.length;
  let waiting = order as { credits: number }[];
  const days: DayPlan[] = [];
  for (let day = 1; waiting.length > 0 && day <= MAX_DAYS; day++) {
    const room = keys.map((k) => ({
      credits: k.cap - (day === 1 ? (k.usedToday ?? 0) : 0),
      sends: k.submissionsPerDay,
    }));
    const placed = keys.map((k) => ({ key: k.key, items: 0, credits: 0 }));
    const later: { credits: number }[] = [];
    for (const item of waiting) {
      const k = roomiest(room, item.credits);
      if (k === undefined) {
        later.push(item);
        continue;
      }
      room[k]!.credits -= item.credits;
      room[k]!.sends--;
      placed[k]!.items++;
      placed[k]!.credits += item.credits;
    }
    if (later.length === waiting.length && day > 1) break; // nothing fits a whole day: cannot happen under the largest cap
    days.push({ day, keys: placed });
    waiting = later;
  }
  const endsOnDay = days.findLast((d) => d.keys.some((k) => k.items > 0))?.day ?? 0;
  return { days: days.slice(0, endsOnDay), endsOnDay, notPlaced: notPlaced + waiting.length };
}

/** The key with the most credits left that can take `credits` more and one more submission today. */
function roomiest(room: readonly { credits: number; sends: number }[], credits: number): number | undefined {
  let best: number | undefined;
  for (const [k, r] of room.entries()) {
    if (r.sends <= 0 || r.credits < credits) continue;
    if (best === undefined || r.credits > room[best]!.credits) best = k;
  }
  return best;
}
