import { RunClock } from '../scheduler/clock.js';
import { existsSync } from 'node:fs';
import { lockHolder, type PublicationCounts, type Store } from '../store/index.js';
import { openStateReadOnly } from '../store/state-path.js';

/** Everything one scrape reports, read from the state in one go. */
export interface Snapshot {
  present: boolean;
  items: Record<string, number>;
  creditsByKey: { key: string; charged: number; refunded: number }[];
  creditsByTag: { tag: string; charged: number; refunded: number }[];
  dailyCap: { key: string; cap: number | undefined; used: number }[];
  /** The counts runs added up as they went (submissions, 429s, failures, seconds), by name. */
  counts: { name: string; key: string; label: string; value: number }[];
  /** Ended jobs per type, under the first bucket bound (seconds) their run time fits: how many, and their sum. */
  jobSeconds: { type: string; le: number; n: number; sum: number }[];
  downloads: { count: number; bytes: number };
  /** A live run holds the state (its lock's process is alive and its session open). */
  running: boolean;
  paused: boolean;
  unreachable: boolean;
  stalledTransfers: number;
  /** The live run sees the bucket answer nothing but faults. */
  bucketUnreachable: boolean;
  /** Outputs and web copies published to the bucket, and waiting for it (none without a bucket). */
  publication: PublicationCounts;
  /** Web copies owed and not made yet. */
  copiesMissing: number;
}

const NOTHING: Snapshot = {
  present: false,
  items: {},
  creditsByKey: [],
  creditsByTag: [],
  dailyCap: [],
  counts: [],
  jobSeconds: [],
  downloads: { count: 0, bytes: 0 },
  running: false,
  paused: false,
  unreachable: false,
  stalledTransfers: 0,
  bucketUnreachable: false,
  publication: { published: 0, waiting: 0, waitingBytes: 0, failed: 0, copiesPublished: 0, copiesWaiting: 0 },
  copiesMissing: 0,
};

/** Reads the state afresh (a run may have replaced or migrated it since the last scrape); none yet is a snapshot of nothing. */
export function readSnapshot(statePath: string, now: number): Snapshot {
  if (!existsSync(statePath)) return NOTHING;
  const store = openStateReadOnly(statePath);
  try {
    return snapshotOf(store, statePath, now);
  } finally {
    store.close();
  }
}

function snapshotOf(store: Store, statePath: string, now: number): Snapshot {
  const last = store.runs.all().at(-1);
  const running = Boolean(last && last.ended_at === null && lockHolder(statePath)?.alive);
  return {
    present: true,
    items: store.itemReports.counts(),
    creditsByKey: store.metrics
      .creditsByKey()
      .map((r) => ({ key: r.key_fp, charged: r.charged, refunded: r.refunded })),
    creditsByTag: store.metrics.creditsByTag(),
    dailyCap: dailyCapUse(store, now, last?.time_scale ?? 1),
    counts: store.counters.all().map((c) => ({ name: c.name, key: c.key_fp, label: c.label, value: c.value })),
    jobSeconds: store.metrics.jobSeconds(),
    downloads: store.metrics.downloads(),
    running,
    paused: store.steering.request()?.mode === 'paused',
    unreachable: running && last?.unreachable_since != null,
    stalledTransfers: running ? (last?.stalled_transfers ?? 0) : 0,
    bucketUnreachable: running && last?.bucket_trouble_since != null,
    publication: store.publications.counts(),
    copiesMissing: store.webCopies.missing(),
  };
}

/** Each key's cap (as its last run settled it) and what the current key day has charged of it. */
function dailyCapUse(store: Store, now: number, timeScale: number): Snapshot['dailyCap'] {
  const caps = JSON.parse(store.meta('key_daily_caps') ?? '{}') as Record<string, number>;
  const used = new Map(
    store.metrics.keyDay(new RunClock(Date.now, timeScale).dayOf(now)).map((r) => [r.key_fp, r.charged]),
  );
  const keys = new Set([...Object.keys(caps), ...used.keys()]);
  return [...keys].sort().map((key) => ({ key, cap: caps[key], used: used.get(key) ?? 0 }));
}
