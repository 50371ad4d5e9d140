import type { AttemptForReconcile, ItemEcho } from '../store/index.js';
import type { KeyListing, ListedJob } from './listing.js';

/** A job the service charged that no attempt of the state knows. */
export interface UnknownJob {
  id: string;
  key: string;
  status: string;
  createdAt: string | null;
  charged: number | null;
  refunded: number;
  /** The item it most likely belongs to: the service echoed a prompt and model that one of the state's items has. */
  likelyItem: string | null;
}

/** An attempt the state holds as accepted (or maybe accepted, matched by its echo) whose job the service does not list. */
export interface LostJob {
  item: string;
  attempt: number;
  jobId: string;
  key: string | null;
}

export interface ReconcileReport {
  period: { from: string | null; to: string };
  keys: { key: string; jobs: number; pages: number; complete: boolean; stoppedBecause?: string }[];
  unknown: UnknownJob[];
  lost: LostJob[];
  /** Maybe-accepted attempts whose job the list shows (matched by prompt and model): the next run's resend finds it, paying nothing. */
  foundMaybeAccepted: { item: string; jobId: string }[];
  credits: {
    service: { charged: number; refunded: number; net: number; jobsWithoutCharge: number };
    state: { charged: number; refunded: number; net: number };
    /** Service net minus state net; null when some listed job does not show its charge. */
    difference: number | null;
  };
  /** Jobs of another origin (the web application), counted apart. */
  otherOrigins: { origin: string; jobs: number; charged: number }[];
  /** Listed jobs created before the run's first session: not the run's. */
  beforePeriod: number;
  differences: number;
}

/** Jobs created this long before the run's first session still count: the two clocks may differ. */
const CLOCK_SKEW_MS = 10 * 60_000;

/** The origin value of API jobs; the spec does not enumerate them, so anything naming the API, or none, counts as ours. */
const isApiOrigin = (origin: string | undefined) => origin === undefined || /api/i.test(origin);

/**
 * Compares the state's attempts with the service's job lists. Nothing is
 * sent and nothing changes: a report of what was paid that the state does
 * not know, and what the state knows that the service lost.
 */
export function reconcile(
  attempts: readonly AttemptForReconcile[],
  items: readonly ItemEcho[],
  listings: readonly KeyListing[],
  periodFrom: number | undefined,
  now: number,
): ReconcileReport {
  const from = periodFrom === undefined ? undefined : periodFrom - CLOCK_SKEW_MS;
  const listed = new Map<string, ListedJob>();
  for (const listing of listings) for (const job of listing.jobs) if (!listed.has(job.id)) listed.set(job.id, job);
  const likelyItem = likelyItemOf(attempts, items);
  const { ours, others, beforePeriod } = sortByOrigin(listed, from, likelyItem);
  const { unknown, foundMaybeAccepted } = unknownJobs(ours, attempts, likelyItem);
  const lost = lostJobs(attempts, listings, listed);
  const credits = creditsOnBothSides(ours, attempts);
  const difference = credits.difference;
  return {
    period: { from: from === undefined ? null : new Date(from).toISOString(), to: new Date(now).toISOString() },
    keys: listings.map((l) => ({
      key: l.key,
      jobs: l.jobs.length,
      pages: l.pages,
      complete: l.complete,
      ...(l.stoppedBecause ? { stoppedBecause: l.stoppedBecause } : {}),
    })),
    unknown,
    lost,
    foundMaybeAccepted,
    credits,
    otherOrigins: [...others].map(([origin, o]) => ({ origin, ...o })),
    beforePeriod,
    differences: unknown.length + lost.length + (difference !== null && difference !== 0 ? 1 : 0),
  };
}

/** The item an unknown job most likely belongs to: the service may echo the model and prompt. */
function likelyItemOf(
  attempts: readonly AttemptForReconcile[],
  items: readonly ItemEcho[],
): (job: ListedJob) => string | null {
  // Items by what the service may echo: an unknown job with the same model and prompt is most likely theirs.
  const byEcho = new Map<string, string[]>();
  const waiting = new Set(attempts.filter((a) => !a.job_id && a.status === 'sent').map((a) => a.item_id));
  for (const item of items) {
    if (item.prompt === null) continue;
    const key = `${item.model}\n${item.prompt}`;
    byEcho.set(key, [...(byEcho.get(key) ?? []), item.id]);
  }
  const withJob = new Set(attempts.filter((a) => a.job_id).map((a) => a.item_id));
  return (job: ListedJob) => {
    if (job.prompt === undefined || job.model === undefined) return null;
    const candidates = byEcho.get(`${job.model}\n${job.prompt}`) ?? [];
    // One whose answer never came first (that is where a paid job goes missing from the state), then one with no job at all.
    return (
      candidates.find((id) => waiting.has(id)) ?? candidates.find((id) => !withJob.has(id)) ?? candidates[0] ?? null
    );
  };
}

/** The API's jobs of this run's period, apart from other origins' and older runs'. */
function sortByOrigin(
  listed: ReadonlyMap<string, ListedJob>,
  from: number | undefined,
  likelyItem: (job: ListedJob) => string | null,
) {
  const ours: ListedJob[] = [];
  const others = new Map<string, { jobs: number; charged: number }>();
  let beforePeriod = 0;
  for (const job of listed.values()) {
    if (!isApiOrigin(job.origin)) {
      const o = others.get(job.origin!) ?? { jobs: 0, charged: 0 };
      others.set(job.origin!, { jobs: o.jobs + 1, charged: o.charged + (job.charged ?? 0) });
    } else if (from !== undefined && job.createdAt !== undefined && job.createdAt < from && likelyItem(job) === null) {
      // Older than the run and echoing none of its items: another run's. One that echoes an item is ours whatever its age (a state deleted and begun again).
      beforePeriod++;
    } else ours.push(job);
  }
  return { ours, others, beforePeriod };
}

/** Paid jobs the state does not know, and the "maybe accepted" items whose job is among them. */
function unknownJobs(
  ours: readonly ListedJob[],
  attempts: readonly AttemptForReconcile[],
  likelyItem: (job: ListedJob) => string | null,
) {
  const knownJobs = new Set(attempts.flatMap((a) => (a.job_id ? [a.job_id] : [])));
  const waiting = new Set(attempts.filter((a) => !a.job_id && a.status === 'sent').map((a) => a.item_id));
  const unknown: UnknownJob[] = [];
  const foundMaybeAccepted: { item: string; jobId: string }[] = [];
  for (const job of ours) {
    if (knownJobs.has(job.id)) continue;
    const item = likelyItem(job);
    if (item && waiting.has(item) && !foundMaybeAccepted.some((f) => f.item === item))
      foundMaybeAccepted.push({ item, jobId: job.id });
    unknown.push({
      id: job.id,
      key: job.key,
      status: job.status,
      createdAt: job.createdAt === undefined ? null : new Date(job.createdAt).toISOString(),
      charged: job.charged ?? null,
      refunded: job.refunded,
      likelyItem: item,
    });
  }
  return { unknown, foundMaybeAccepted };
}

/** Jobs the state holds as accepted that a list read to its end does not show. */
function lostJobs(
  attempts: readonly AttemptForReconcile[],
  listings: readonly KeyListing[],
  listed: ReadonlyMap<string, ListedJob>,
): LostJob[] {
  // A job is only missing from a list read to its end, by the key that made it (or any, for attempts made before keys were recorded).
  const completeKeys = new Set(listings.filter((l) => l.complete).map((l) => l.key));
  const lost: LostJob[] = [];
  for (const a of attempts) {
    if (!a.job_id || listed.has(a.job_id)) continue;
    const readable =
      a.key_fp === null ? listings.length > 0 && listings.every((l) => l.complete) : completeKeys.has(a.key_fp);
    if (readable) lost.push({ item: a.item_id, attempt: a.n, jobId: a.job_id, key: a.key_fp });
  }
  return lost;
}

/** Credits per the service and per the state, and their difference (unknown when a job shows no charge). */
function creditsOnBothSides(ours: readonly ListedJob[], attempts: readonly AttemptForReconcile[]) {
  const serviceCharged = ours.reduce((s, j) => s + (j.charged ?? 0), 0);
  const serviceRefunded = ours.reduce((s, j) => s + j.refunded, 0);
  const jobsWithoutCharge = ours.filter((j) => j.charged === undefined).length;
  const stateCharged = attempts.reduce((s, a) => s + a.charged, 0);
  const stateRefunded = attempts.reduce((s, a) => s + a.refunded, 0);
  const serviceNet = serviceCharged - serviceRefunded;
  const stateNet = stateCharged - stateRefunded;
  const difference = jobsWithoutCharge > 0 ? null : serviceNet - stateNet;
  return {
    service: { charged: serviceCharged, refunded: serviceRefunded, net: serviceNet, jobsWithoutCharge },
    state: { charged: stateCharged, refunded: stateRefunded, net: stateNet },
    difference,
  };
}
