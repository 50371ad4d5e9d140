import type { ApiClient } from '../../src/api/index.js';
import { Catalog } from '../../src/api/catalog.js';
import { loadManifest } from '../../src/manifest/index.js';
import { Runner, type RunSummary } from '../../src/runner/index.js';
import type { ResolvedRunOptions } from '../../src/options/resolve.js';
import { testOptions } from './run-options.js';
import { DEFAULT_KEY_LIMITS, type KeyLimits } from '../../src/scheduler/limits.js';
import { FolderSink, type OutputSink } from '../../src/sink/index.js';
import { Store } from '../../src/store/index.js';
import type { RunWorkspace } from './run.js';
import type { TestSim } from './sim.js';
import { Closing } from '../../src/util/closing.js';

/**
 * The workspace's manifest run by the Runner in this process (at 600x), for
 * what the CLI cannot inject: another client, a sink that fails as a full disk does.
 */
export async function runInProcess(
  t: TestSim,
  ws: RunWorkspace,
  inject: {
    client?: ApiClient;
    /** Where outputs go, instead of the workspace's out dir (a fake sink, a full disk). */
    outputs?: OutputSink;
    options?: Partial<Omit<ResolvedRunOptions, 'clock'>> & { timeScale?: number };
    /** Subscribes to the run's events before it starts. */
    listen?: (runner: Runner) => void;
    /** The key's limits, instead of the service's at 600x. */
    limits?: KeyLimits;
  } = {},
): Promise<RunSummary> {
  const { loaded } = await loadManifest('m.yaml', ws.dir);
  const store = Store.open(ws.statePath);
  const closing = new Closing();
  try {
    const limits = inject.limits ?? {
      ...DEFAULT_KEY_LIMITS,
      submit: { count: 10, windowMs: 100 },
      read: { count: 120, windowMs: 100 },
      upload: { count: 30, windowMs: 100 },
    };
    const catalog = await Catalog.fetch(t.client, ['image']);
    const keys = [{ fingerprint: 'fp-test', client: inject.client ?? t.client, limits }];
    const runner = new Runner({
      closing,
      options: testOptions(inject.options),
      keys,
      store,
      manifest: loaded!,
      catalog,
      toSync: { items: loaded!.items },
      outputs: inject.outputs ?? new FolderSink(ws.outDir),
      budget: undefined,
    });
    inject.listen?.(runner);
    return await runner.run();
  } finally {
    await closing.close();
    store.close();
  }
}
