import { createWriteStream } from 'node:fs';
import { dirname } from 'node:path';
import type { KeyLimits } from '../scheduler/limits.js';
import { createLogger, type Logger } from '../log/logger.js';
import type { ManifestIssue } from '../manifest/index.js';
import { resolveRunOptions, type ResolvedRunOptions, type RunFlags } from '../options/resolve.js';
import { openedOf, prepareRun, Runner, type PreparedRun } from '../runner/index.js';
import { EventBus } from '../util/event-bus.js';
import { Closing } from '../util/closing.js';
import { EXIT, ExitError } from '../util/exit-error.js';
import { makeFolderSync } from '../util/make-folder.js';
import { connect } from './connection.js';
import { EventChannel, type GenbatchEvent, type StartEvent } from './events.js';
import { notifierFor, outcomeOf, resumeHint, type RunOutcome } from './run-end.js';
import { liveView, type LiveView } from './views.js';

/** How long an interrupted run's end waits for the bucket. */
const END_BUCKET_MS = 1_000;

/** What a run opened, as its start tells a user: where it reads and writes, with which keys, and what it found there. */
export interface RunStart {
  readonly manifest: { readonly name: string; readonly file: string; readonly absPath: string };
  /** The state, the outputs (a folder, or `s3://BUCKET/PREFIX`) and the log. */
  readonly places: { readonly state: string; readonly outDir: string; readonly log: string };
  readonly items: number;
  /** Its items are read back from the state, not expanded again. */
  readonly resumed: boolean;
  readonly warnings: readonly ManifestIssue[];
  /** The keys the service accepted, and those it refused (left out of the run). */
  readonly keys: {
    readonly accepted: readonly { readonly fingerprint: string; readonly limits: KeyLimits }[];
    readonly refused: readonly { readonly fingerprint: string; readonly code: string; readonly message: string }[];
  };
  /** What this run found and did before its first submission (see PreparedRun for each). */
  readonly found: Pick<
    PreparedRun,
    'madeBy' | 'restored' | 'redoneRejected' | 'rehearsalStartedOver' | 'rehearsalGoesOnWith'
  >;
  /** The service says it is a simulator (or it is a rehearsal's): the state and outputs are kept apart from a real run's. */
  readonly simulated: boolean;
  /** Outputs go to a bucket. */
  readonly publishing: boolean;
}

/** How a run is opened from outside: what stops it, and what it says while the service answers nothing yet. */
export interface OpenWatch {
  signal?: AbortSignal | undefined;
  onServiceWait?(reason: string, unreachableMs: number): void;
}

/**
 * Opens a run, or a resume, as `genbatch run` does: the options resolved, the
 * keys connected, the manifest checked, the state restored and opened, the
 * coordinator, the sink, the log; nothing is sent yet. What it opened is
 * closed in the reverse order by the Run (`await using run = await openRun(...)`),
 * or here, when the opening fails. The command line's flags, as `openRun` takes them resolved.
 */
export async function openRunWith(
  path: string,
  flags: RunFlags,
  env: NodeJS.ProcessEnv,
  cwd: string,
  watch: OpenWatch = {},
): Promise<Run> {
  const given = resolveRunOptions(flags, { manifestPath: path, cwd, env });
  if (watch.signal?.aborted) throw nothingSent();
  const closing = new Closing();
  try {
    // Connected at once: each key's /me is on its way while the manifest is read and checked.
    const connecting = connect({ baseUrl: given.baseUrl, simulate: given.simulate }, env, given.clock.timeScale);
    const wait = {
      // A service that answers nothing yet is waited for: briefly before it ever answered (a wrong URL), else as a run waits for it.
      onWait: (reason: string, unreachableMs: number) => watch.onServiceWait?.(reason, unreachableMs),
      signal: watch.signal,
    };
    const prepared = await prepareRun(given, connecting, wait, closing);
    const logger = openLog(prepared, closing);
    const run = new Run(prepared, logger, closing);
    const { signal } = watch;
    if (signal) {
      const stop = () => run.stop();
      signal.addEventListener('abort', stop, { once: true });
      closing.defer(() => signal.removeEventListener('abort', stop));
      if (signal.aborted) stop();
    }
    return run;
  } catch (error) {
    await closing.close().catch(() => {});
    // An abort that ended a wait for the service: nothing was sent.
    if (watch.signal?.aborted) throw nothingSent(error);
    throw error;
  }
}

const nothingSent = (cause?: unknown) =>
  new ExitError(EXIT.interrupted, 'interrupted: nothing was sent.', undefined, cause ? { cause } : undefined);

/** The run's log, its API keys never in it; its last line is on disk and its file closed once the run is. */
function openLog(prepared: PreparedRun, closing: Closing): Logger {
  const { options, connection } = prepared;
  makeFolderSync(dirname(prepared.logPath));
  const file = createWriteStream(prepared.logPath, { flags: 'a' });
  closing.defer(() => new Promise((done) => file.end(done)));
  const secrets = [...options.secrets, connection.simulator?.apiKey ?? ''].filter(Boolean);
  return createLogger({ secrets, destination: file });
}

/**
 * One run, from what `openRun` opened to the outcome: its events, its
 * figures while it works, and why it stopped, the one value its exit code is
 * derived from. It runs once; disposing of it closes what it holds.
 */
export class Run implements AsyncDisposable {
  /** The options it runs with, at the service's own time scale where a simulator said one. */
  readonly options: ResolvedRunOptions;
  readonly start: RunStart;
  private readonly runner: Runner;
  /** The runner's events and the run's own start. */
  private readonly bus = new EventBus<GenbatchEvent>();
  private channel: EventChannel<GenbatchEvent> | undefined;
  private bucketDeadline: NodeJS.Timeout | undefined;
  private running: Promise<RunOutcome> | undefined;

  constructor(
    private readonly prepared: PreparedRun,
    private readonly logger: Logger,
    private readonly closing: Closing,
  ) {
    this.options = prepared.options;
    this.start = startOf(prepared);
    // Registered before the runner's parts, so closed at the disposal, after them: the bucket's deadline after an
    // interrupt stands while they write their last (the snapshot, the release of the place), and the results after.
    closing.defer(() => clearTimeout(this.bucketDeadline));
    let forwarding: (() => void) | undefined;
    closing.defer(() => forwarding?.());
    // The keys as the run gets them, each with the coordinator its limits are shared through (if any).
    const keys = prepared.pool.keys.map((key) => ({ ...key, coordinator: prepared.coordinator }));
    this.runner = new Runner({ ...openedOf(prepared), keys, logger, closing });
    forwarding = this.runner.events.on((event) => this.bus.emit(event));
  }

  /** Every event, each to `listener` as it happens; returns how to stop listening. */
  on(listener: (event: GenbatchEvent) => void): () => void {
    return this.bus.on(listener);
  }

  /** The events as one `for await` reader takes them, buffered from this call on (see EventChannel). */
  events(buffer = 10_000): AsyncIterable<GenbatchEvent> {
    if (this.channel) throw new Error('the events of a run can be read once: keep one for await loop');
    const channel = new EventChannel<GenbatchEvent>(buffer);
    this.channel = channel;
    const stop = this.on((event) => channel.push(event));
    this.closing.defer(() => {
      stop();
      channel.close();
    });
    return channel;
  }

  /** Its figures as they stand, each read from the state when asked. */
  status(): LiveView {
    return liveView(this.prepared.store);
  }

  /** Why it stops, once it does (from outside, or a stage's reason the run took): an interrupt is the reason whenever it lands, the end's own writes included. */
  get stopReason(): RunOutcome['stop'] {
    return this.runner.stopReason;
  }

  /**
   * Stops it from outside, in the words its `stopReason` and the outcome's `stop` use. `interrupted` (Ctrl-C, exit
   * 130): nothing new is sent, what is on the wire records its answer, and the bucket gets a second to take what the
   * end writes there (the results, the last snapshot, the lease's release); what it has not taken by then is the
   * next run's, and the process is not held for it. `drained` (as genbatch drain, exit 3): nothing new is sent;
   * what is in flight is finished and downloaded.
   */
  stop(kind: 'interrupted' | 'drained' = 'interrupted'): void {
    this.runner.stop(
      kind,
      kind === 'drained'
        ? 'drained: nothing new is sent; the jobs in flight are finished and downloaded'
        : `interrupted. ${resumeHint(this.options.simulate)}`,
    );
    const bucket = this.prepared.outputs.publishing;
    if (kind === 'drained' || !bucket || this.bucketDeadline) return;
    this.bucketDeadline = setTimeout(
      () => bucket.abandon(`the bucket did not answer within ${END_BUCKET_MS / 1000} s of the interrupt`),
      END_BUCKET_MS,
    );
    this.bucketDeadline.unref();
  }

  /** Runs it to its end (once: a second call gets the same outcome), then writes the results files. */
  run(): Promise<RunOutcome> {
    this.running ??= this.runOnce();
    return this.running;
  }

  private async runOnce(): Promise<RunOutcome> {
    const { prepared, options, logger, runner } = this;
    const notifier = notifierFor(options, prepared, logger);
    const stopNotifying = notifier && runner.events.on(notifier.onEvent);
    try {
      this.bus.emit(startedEvent(this.start, options));
      notifier?.start();
      if (prepared.restored) logger.warn({ restored: prepared.restored }, 'state restored from its snapshot');
      logger.info(
        {
          manifest: prepared.manifest.source.absPath,
          state: prepared.statePath,
          outDir: prepared.outDir,
          timeScale: options.clock.timeScale,
        },
        'run started',
      );
      const summary = await runner.run();
      // An interrupt is the reason whenever it lands; a drain's end says what it left (the summary's own words).
      const outcome = await outcomeOf(summary, prepared, logger, () =>
        runner.stopReason?.kind === 'interrupted' ? runner.stopReason : undefined,
      );
      await notifier?.ended(
        outcome.stop?.message ?? `finished: ${outcome.counts.done} of ${total(outcome)} items done`,
      );
      return outcome;
    } finally {
      notifier?.stop();
      stopNotifying?.();
      // A reader's loop ends with the run.
      this.channel?.close();
      logger.info('run ended');
    }
  }

  /** Closes what it opened, in the reverse order; a run under way is let end first. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.running?.catch(() => {});
    await this.closing.close();
  }
}

function startOf(prepared: PreparedRun): RunStart {
  const { manifest, pool } = prepared;
  return {
    manifest: { name: manifest.name, file: manifest.source.file, absPath: manifest.source.absPath },
    places: { state: prepared.statePath, outDir: prepared.outDir, log: prepared.logPath },
    items: prepared.itemCount,
    resumed: prepared.resumed,
    warnings: prepared.warnings,
    keys: { accepted: pool.keys, refused: pool.refused },
    found: {
      madeBy: prepared.madeBy,
      restored: prepared.restored,
      redoneRejected: prepared.redoneRejected,
      rehearsalStartedOver: prepared.rehearsalStartedOver,
      rehearsalGoesOnWith: prepared.rehearsalGoesOnWith,
    },
    simulated: prepared.simulated,
    publishing: prepared.outputs.publishing !== undefined,
  };
}

function startedEvent(start: RunStart, options: ResolvedRunOptions): StartEvent {
  return {
    kind: 'started',
    manifest: start.manifest.absPath,
    state: start.places.state,
    outDir: start.places.outDir,
    log: start.places.log,
    items: start.items,
    resumed: start.resumed,
    rehearsal: options.simulate,
    keys: start.keys.accepted.map((k) => k.fingerprint),
  };
}

const total = (outcome: RunOutcome) => Object.values(outcome.counts).reduce((a, b) => a + b, 0);
