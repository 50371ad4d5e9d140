import type { Catalog } from '../api/catalog.js';
import type { Logger } from '../log/logger.js';
import type { ManifestTop } from '../manifest/index.js';
import type { ResolvedRunOptions } from '../options/resolve.js';
import type { OutputSink } from '../sink/index.js';
import type { Store } from '../store/index.js';
import type { Closing } from '../util/closing.js';
import type { ToSync } from './sync/first-sync.js';
import type { RunKey } from './keys/lanes.js';

/**
 * What a run is built from: what its start resolved, opened and read for it
 * (the runner takes these as they are), and the keys it goes with.
 */
export interface RunInputs {
  readonly options: ResolvedRunOptions;
  readonly store: Store;
  readonly manifest: ManifestTop;
  readonly catalog: Catalog | undefined;
  readonly toSync?: ToSync | undefined;
  /** Where verified outputs go, opened from `options.out`. */
  readonly outputs: OutputSink;
  /** --max-credits, else the manifest's budget, net of refunds. */
  readonly budget: number | undefined;
  /** The state's file: the review's thumbnails of the outputs are kept beside it. */
  readonly statePath?: string | undefined;
  /** The run's API keys (one, or a pool), each with its limits. */
  readonly keys: readonly RunKey[];
  readonly logger?: Logger | undefined;
  /**
   * The run's one close stack: each part registers its close here as it is built (or started); the run's end
   * unwinds what its parts registered, the last first, each once, and the stack's owner closes the rest.
   */
  readonly closing: Closing;
  /** Tests' shorter times; a run of the command line or the library never sets them. */
  readonly tuning?: RunTuning | undefined;
}

/** Times a test makes short, each defaulting to the run's own. */
export interface RunTuning {
  /** How long nothing may be sent, answered or said before the watchdog looks. */
  readonly quietMs?: number | undefined;
  /** How often a changed state is snapshot to the bucket. */
  readonly snapshotEveryMs?: number | undefined;
  /** How long a claim on the output place lives unrenewed. */
  readonly leaseMs?: number | undefined;
  /** How long a step of a first sync may hold the event loop (tests make every step a few rows). */
  readonly syncStepMs?: number | undefined;
}
