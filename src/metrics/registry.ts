import { Counter, Gauge, Registry } from 'prom-client';
import { JOB_SECONDS_BUCKETS, type CounterName } from '../store/index.js';
import { StateHistogram } from './state-histogram.js';
import type { Snapshot } from './snapshot.js';

/** The counters runs add up in the state, by their name there: the metric, and its labels (a key, the state's `label` as a code). */
const COUNTED: Record<CounterName, { metric: string; help: string; labels: ('key' | 'code')[] }> = {
  submissions: {
    metric: 'genbatch_submissions_total',
    help: 'Submissions sent (POST /jobs), resends included',
    labels: ['key'],
  },
  rate_limited: {
    metric: 'genbatch_rate_limited_total',
    help: 'Answers 429, by key and code',
    labels: ['key', 'code'],
  },
  download_failures: {
    metric: 'genbatch_download_failures_total',
    help: 'Failed tries at an output',
    labels: ['code'],
  },
  publish_failures: { metric: 'genbatch_publish_failures_total', help: 'Failed tries at a bucket', labels: ['code'] },
  stalls: {
    metric: 'genbatch_stalls_total',
    help: 'Watchdog stalls: nothing moved and no known wait explains it',
    labels: [],
  },
  outage_seconds: {
    metric: 'genbatch_outage_seconds_total',
    help: 'Seconds the service answered nothing (ended outages)',
    labels: [],
  },
  bucket_outage_seconds: {
    metric: 'genbatch_bucket_outage_seconds_total',
    help: 'Seconds the bucket answered nothing but faults (ended spells)',
    labels: [],
  },
  stalled_transfer_seconds: {
    metric: 'genbatch_stalled_transfer_seconds_total',
    help: 'Seconds transfers sat silent inside their body after being reported stalled',
    labels: [],
  },
};

/**
 * The metrics `genbatch metrics` serves, filled from one snapshot of the state
 * per scrape. Totals are counters (they only grow in the state); what a live
 * run is doing now is gauges.
 */
export class StateMetrics {
  readonly registry = new Registry();
  private readonly items;
  private readonly charged;
  private readonly refunded;
  private readonly tagCharged;
  private readonly tagRefunded;
  private readonly capCredits;
  private readonly capUsed;
  private readonly jobSeconds;
  private readonly downloads;
  private readonly downloadBytes;
  private readonly counted;
  private readonly flags;
  private readonly toPublish;
  private readonly published;
  private readonly copiesMissing;

  constructor() {
    const registers = [this.registry];
    const gauge = (name: string, help: string, labelNames: string[] = []) =>
      new Gauge({ name, help, labelNames, registers });
    const counter = (name: string, help: string, labelNames: string[] = []) =>
      new Counter({ name, help, labelNames, registers });
    this.items = gauge('genbatch_items', 'Items of the manifest by state', ['state']);
    this.charged = counter('genbatch_credits_charged_total', 'Credits charged, by API key fingerprint', ['key']);
    this.refunded = counter('genbatch_credits_refunded_total', 'Credits refunded, by API key fingerprint', ['key']);
    this.tagCharged = counter(
      'genbatch_tag_credits_charged_total',
      'Credits charged for the items of a tag (an item with two tags counts in both)',
      ['tag'],
    );
    this.tagRefunded = counter('genbatch_tag_credits_refunded_total', 'Credits refunded for the items of a tag', [
      'tag',
    ]);
    this.capCredits = gauge('genbatch_daily_cap_credits', "A key's daily cap", ['key']);
    this.capUsed = gauge('genbatch_daily_cap_used_credits', 'Credits charged in the current key day', ['key']);
    this.jobSeconds = new StateHistogram(
      'genbatch_job_duration_seconds',
      "From the service's acceptance of a job to its end",
      JOB_SECONDS_BUCKETS,
    );
    this.registry.registerMetric(this.jobSeconds.asMetric());
    this.downloads = counter('genbatch_downloads_total', 'Outputs downloaded and verified');
    this.downloadBytes = counter('genbatch_download_bytes_total', 'Bytes of the outputs downloaded and verified');
    this.counted = new Map(
      Object.entries(COUNTED).map(([name, c]) => [
        name,
        { labels: c.labels, counter: counter(c.metric, c.help, c.labels) },
      ]),
    );
    this.toPublish = gauge(
      'genbatch_files_to_publish',
      'Outputs and web copies saved and verified locally, waiting for the bucket',
      ['kind'],
    );
    this.published = counter('genbatch_files_published_total', 'Outputs and web copies verified in the bucket', [
      'kind',
    ]);
    this.copiesMissing = gauge(
      'genbatch_copies_missing',
      'Web copies the current image outputs are owed, not made yet',
    );
    this.flags = {
      present: gauge('genbatch_state_present', 'The state file exists (0 before the first run)'),
      running: gauge('genbatch_run_active', 'A run holds the state now'),
      paused: gauge('genbatch_run_paused', 'The state is paused (genbatch pause)'),
      unreachable: gauge('genbatch_service_unreachable', 'The live run sees the service answer nothing'),
      stalled: gauge('genbatch_transfers_stalled', 'Transfers of the live run silent inside their body'),
      bucket: gauge('genbatch_bucket_unreachable', 'The live run sees the bucket answer nothing but faults'),
    };
  }

  /** Every metric set from the snapshot (nothing of an earlier scrape kept). */
  fill(s: Snapshot): void {
    this.registry.resetMetrics();
    for (const [state, n] of Object.entries(s.items)) this.items.set({ state }, n);
    for (const k of s.creditsByKey) {
      this.charged.inc({ key: k.key }, k.charged);
      this.refunded.inc({ key: k.key }, k.refunded);
    }
    for (const t of s.creditsByTag) {
      this.tagCharged.inc({ tag: t.tag }, t.charged);
      this.tagRefunded.inc({ tag: t.tag }, t.refunded);
    }
    for (const d of s.dailyCap) {
      if (d.cap !== undefined) this.capCredits.set({ key: d.key }, d.cap);
      this.capUsed.set({ key: d.key }, d.used);
    }
    this.jobSeconds.set(s.jobSeconds.map((b) => ({ labels: { type: b.type }, le: b.le, n: b.n, sum: b.sum })));
    this.downloads.inc(s.downloads.count);
    this.downloadBytes.inc(s.downloads.bytes);
    for (const c of s.counts) {
      const counted = this.counted.get(c.name as CounterName);
      if (!counted) continue;
      const labels = Object.fromEntries(counted.labels.map((l) => [l, l === 'key' ? c.key : c.label]));
      counted.counter.inc(labels, c.value);
    }
    const flag = (g: Gauge, on: boolean | number) => g.set(Number(on));
    flag(this.flags.present, s.present);
    flag(this.flags.running, s.running);
    flag(this.flags.paused, s.paused);
    flag(this.flags.unreachable, s.unreachable);
    flag(this.flags.stalled, s.stalledTransfers);
    flag(this.flags.bucket, s.bucketUnreachable);
    const p = s.publication;
    this.toPublish.set({ kind: 'output' }, p.waiting - p.copiesWaiting);
    this.toPublish.set({ kind: 'copy' }, p.copiesWaiting);
    this.published.inc({ kind: 'output' }, p.published - p.copiesPublished);
    this.published.inc({ kind: 'copy' }, p.copiesPublished);
    this.copiesMissing.set(s.copiesMissing);
  }
}
