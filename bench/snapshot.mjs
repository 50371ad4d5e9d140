// The state kept beside the outputs: what a snapshot of a 100,000-item state costs a run (taken every 30 s while
// anything changed), and how long a fresh machine takes to restore it. Against s3rver (the AWS SDK, whole PUTs).
// Goal: a restore under 5 s at 100,000 items.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { DEFAULT_PATIENCE } from '../dist/options/flags.js';
import { openOutputSink } from '../dist/sink/index.js';
import { Store } from '../dist/store/index.js';
import { startWholeBucket } from './bucket.mjs';
import { buildCatalogState } from './state.mjs';

const ITEMS = 100_000;
const TAKES = 3;
const n = (x) => Math.round(x).toLocaleString('en-US');
const RESTORE_GOAL_MS = 5_000;

export async function snapshotBench() {
  const s3 = await startWholeBucket();
  const dir = mkdtempSync(join(tmpdir(), 'genbatch-bench-snapshot-'));
  try {
    const state = join(dir, 'a', 'ml.sqlite');
    buildCatalogState(state, { items: ITEMS, reviewed: true, tagged: true });
    const stateBytes = statSync(state).size;
    const sink = await openOutputSink('s3://catalog/ml', { statePath: state, env: s3.env, patience: DEFAULT_PATIENCE });
    const store = Store.open(state);
    const takes = [];
    let cpu = 0;
    // What a run's own work (submissions, polls) would wait for while a snapshot is taken beside it.
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    for (let i = 0; i < TAKES; i++) {
      // A commit between snapshots, as a run makes them.
      store.setMeta('bench', String(i));
      const before = process.cpuUsage();
      takes.push(await sink.snapshots.take(store));
      const used = process.cpuUsage(before);
      cpu += (used.user + used.system) / 1000;
    }
    loop.disable();
    store.close();
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const takeMs = median(takes.map((t) => t.ms));
    const packed = takes.at(-1).bytes;
    // A fresh machine: no state, the bucket alone.
    const fresh = join(dir, 'b', 'ml.sqlite');
    const restoring = await openOutputSink('s3://catalog/ml', {
      statePath: fresh,
      env: s3.env,
      patience: DEFAULT_PATIENCE,
    });
    const startedAt = performance.now();
    const restored = await restoring.snapshots.restore(Store.damage);
    const restoreMs = performance.now() - startedAt;
    const check = Store.openReadOnly(fresh);
    const items = check.itemReports.counts();
    check.close();
    const total = Object.values(items).reduce((a, b) => a + b, 0);
    const met = restored !== undefined && total === ITEMS && restoreMs < RESTORE_GOAL_MS;
    console.log(
      `snapshot ${n(ITEMS)}-item state (${n(stateBytes / 1024 / 1024)} MB): each snapshot ${n(takeMs)} ms (median of ${TAKES}), ${n(cpu / TAKES)} CPU-ms, ${(packed / 1024 / 1024).toFixed(1)} MB gzipped in the bucket, the event loop held ${n(loop.max / 1e6)} ms at most; taken at most every 30 s while the state changes, and at each end`,
    );
    console.log(
      `restore on a fresh machine: ${n(restoreMs)} ms for ${n(total)} items (goal < ${n(RESTORE_GOAL_MS)} ms): ${met ? 'met' : 'MISSED'}`,
    );
    return met;
  } finally {
    await s3.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
