import type { Logger } from '../log/logger.js';
import { Notifier } from '../notify/notifier.js';
import { parseGiven, resolveRunOptions } from '../options/resolve.js';
import type { GivenRunFlags, ResolvedRunOptions, RunFlags } from '../options/resolve.js';
import { prepareRun, runIdFor, startRun, type PreparedRun, type RunSummary, type Runner } from '../runner/index.js';

/** A run assembled and checked, as the command line's hooks see it before its first submission. */
export type { PreparedRun } from '../runner/index.js';
import type { Store } from '../store/index.js';
import { EXIT, ExitError } from '../util/exit-error.js';
import { connect } from './connection.js';
import { EventChannel, type GenbatchEvent } from './events.js';
import { environmentFor, type Credentials } from './environment.js';
import { asRunError, runExitCode } from './outcome.js';
import { liveView, type LiveView } from './views.js';

/** What `run()` takes: the CLI's run flags in camelCase, the credentials, and a signal that stops the run. */
export type RunOptions = GivenRunFlags &
  Credentials & {
    /** Aborting it is Ctrl-C: nothing new is sent, what is on the wire records its answer, exit code 130. */
    signal?: AbortSignal;
    /** Where a relative manifest, state or out dir is read from (default: the process's working directory). */
    cwd?: string;
    /** Events kept for a reader that falls behind (default 10,000); older ones are dropped and counted. */
    eventBuffer?: number;
  };

/** What a run ended with: its summary, where things are, the results files written, and the CLI's exit code. */
export type RunOutcome = RunSummary & {
  manifest: string;
  state: string;
  outDir: string;
  log: string;
  rehearsal: boolean;
  /** The service said it is a simulator (or it was a rehearsal's): the state and outputs are kept apart from a real run's. */
  simulated: boolean;
  results: { jsonl: string; csv: string; html: string | null; sidecars?: number } | null;
  /** Why the results files could not be written (a full disk, say); `genbatch report` writes them from the state. */
  resultsProblem?: string;
  /** An interrupt's end that the bucket did not answer in time: the results, the last snapshot and the lease's release are the next run's. */
  leftToNextRun?: boolean;
  exitCode: number;
};

/** A run under way: its events as they happen, and its outcome once it ends. */
export interface RunHandle {
  events: AsyncIterable<GenbatchEvent>;
  /** Resolves when the run has ended and closed all it held; rejects (an error with `exitCode`) when it cannot start. */
  done: Promise<RunOutcome>;
}

/** How long an interrupted run's end waits for the bucket. */
const END_BUCKET_MS = 1_000;

/** What the command line adds to a run: the live line and the texts, once the run is assembled. */
export interface RunHooks {
  onServiceWait?(reason: string, unreachableMs: number): void;
  /** The run is assembled; `runner.events` can be listened to before its first submission. */
  onStarted?(started: {
    prepared: PreparedRun;
    options: ResolvedRunOptions;
    runner: Runner;
    logger: Logger;
    /** Ctrl-C: stops the run as an abort does. */
    interrupt: () => void;
    /** The run's figures as they stand, for a live line. */
    view: LiveView;
  }): void;
  /** The run has ended (or failed) and its state is still open: the last word of a live line. */
  onEnded?(): void;
}

/**
 * Runs a manifest, or resumes it, as `genbatch run` does, without printing,
 * exiting or taking signals. The process ends by itself once `done` settles.
 */
export function run(manifest: string, options: RunOptions = {}): RunHandle {
  const { signal, cwd, eventBuffer, apiKey, baseUrl, env, ...given } = options;
  const channel = new EventChannel<GenbatchEvent>(eventBuffer ?? 10_000);
  const done = (async () => {
    const flags = { ...parseGiven(given), ...(baseUrl ? { baseUrl } : {}) };
    const environment = environmentFor({ apiKey, env });
    return runWith(manifest, flags, environment, cwd ?? process.cwd(), { signal, emit: (e) => channel.push(e) });
  })().catch((error: unknown) => {
    throw asRunError(error);
  });
  // Ended either way: the reader's loop ends too.
  done.then(
    () => channel.close(),
    () => channel.close(),
  );
  return { events: channel, done };
}

/** How a run is watched and stopped from outside: its events, an abort signal, the command line's hooks. */
export interface RunWatch extends RunHooks {
  signal?: AbortSignal | undefined;
  emit?: (event: GenbatchEvent) => void;
}

/** The run itself, for `run()` and the command line alike. */
export async function runWith(
  path: string,
  flags: RunFlags,
  env: NodeJS.ProcessEnv,
  cwd: string,
  watch: RunWatch,
): Promise<RunOutcome> {
  const given = resolveRunOptions(flags, { manifestPath: path, cwd, env });
  const wait = {
    // A service that answers nothing yet is waited for: briefly before it ever answered (a wrong URL), else as a run waits for it.
    onWait: (reason: string, unreachableMs: number) => {
      watch.emit?.({ kind: 'service-unreachable', reason, unreachableMs });
      watch.onServiceWait?.(reason, unreachableMs);
    },
    signal: watch.signal,
  };
  throwIfAborted(watch.signal);
  // Connected at once: each key's /me is on its way while the manifest is read and checked.
  const connection = { baseUrl: given.baseUrl, simulate: given.simulate };
  const connecting = connect(connection, env, given.clock.timeScale);
  const prepared = await prepareRun(given, connecting, wait).catch((error: unknown) => {
    // An abort that ended a wait for the service: nothing was sent.
    if (watch.signal?.aborted)
      throw new ExitError(EXIT.interrupted, 'interrupted: nothing was sent.', undefined, { cause: error });
    throw error;
  });
  // At the service's own time scale, where a simulator says one and no flag chose it.
  const { options } = prepared;
  const started = startRun(prepared);
  const { runner, logger } = started;
  const stopListening = watch.emit ? runner.events.on(watch.emit) : undefined;
  const notifier = notifierFor(options, prepared, logger);
  if (notifier) runner.events.on(notifier.onEvent);
  const { interrupt, interrupted, release } = interrupter(runner, prepared.outputs.publishing, options.simulate);
  watch.signal?.addEventListener('abort', interrupt, { once: true });
  try {
    watch.emit?.(startedEvent(prepared, options));
    watch.onStarted?.({ prepared, options, runner, logger, interrupt, view: liveView(prepared.store) });
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
    if (watch.signal?.aborted) interrupt();
    const summary = await runner.run();
    const outcome = await outcomeOf(summary, prepared, options, logger, interrupted);
    await notifier?.ended(summary.stop?.message ?? `finished: ${summary.counts.done} of ${total(summary)} items done`);
    return outcome;
  } finally {
    watch.signal?.removeEventListener('abort', interrupt);
    release();
    notifier?.stop();
    watch.onEnded?.();
    stopListening?.();
    logger.info('run ended');
    await started.close();
  }
}

/**
 * How a run is interrupted: the runner stops, and an interrupt stays why the run stopped whenever it lands, the end's
 * writes included. The bucket gets a second to take what an end writes there (the results, the last snapshot, the
 * lease's release); what it has not taken by then is the next run's, and the process is not held for it.
 */
function interrupter(
  runner: Runner,
  bucket: PreparedRun['outputs']['publishing'],
  rehearsal: boolean,
): { interrupt: () => void; interrupted: () => RunSummary['stop']; release: () => void } {
  const interruption = { kind: 'interrupted' as const, message: `interrupted. ${resumeHint(rehearsal)}` };
  let interrupted = false;
  let bucketDeadline: NodeJS.Timeout | undefined;
  const interrupt = () => {
    interrupted = true;
    runner.stop(interruption.kind, interruption.message);
    if (bucket && !bucketDeadline) {
      bucketDeadline = setTimeout(
        () => bucket.abandon(`the bucket did not answer within ${END_BUCKET_MS / 1000} s of the interrupt`),
        END_BUCKET_MS,
      );
      bucketDeadline.unref();
    }
  };
  return {
    interrupt,
    interrupted: () => (interrupted ? interruption : undefined),
    release: () => clearTimeout(bucketDeadline),
  };
}

/** What to tell whoever stops a run: how to go on from there. */
export function resumeHint(rehearsal: boolean): string {
  return rehearsal
    ? 'A rehearsal starts over each time: nothing of it is resumed.'
    : 'The state is saved: run the same command to resume; nothing is paid twice.';
}

/** An abort before anything was prepared: nothing was sent, said as the CLI says it. */
function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ExitError(EXIT.interrupted, 'interrupted: nothing was sent.');
}

function startedEvent(prepared: PreparedRun, options: ResolvedRunOptions): GenbatchEvent {
  return {
    kind: 'started',
    manifest: prepared.manifest.source.absPath,
    state: prepared.statePath,
    outDir: prepared.outDir,
    log: prepared.logPath,
    items: prepared.itemCount,
    resumed: prepared.resumed,
    rehearsal: options.simulate,
    keys: prepared.pool.keys.map((k) => k.fingerprint),
  };
}

const total = (summary: RunSummary) => Object.values(summary.counts).reduce((a, b) => a + b, 0);

/** The run ended: its results files, and the outcome with its exit code. */
async function outcomeOf(
  ended: RunSummary,
  prepared: PreparedRun,
  options: ResolvedRunOptions,
  logger: Logger,
  interruption: () => RunSummary['stop'],
): Promise<RunOutcome> {
  const { results, problem } = await writeResults(prepared, options, logger);
  // Asked once the end is written: an interrupt that landed meanwhile is why the run stopped.
  const stop = interruption() ?? ended.stop;
  const summary = { ...ended, ...(stop ? { stop } : {}) };
  return {
    manifest: prepared.manifest.source.file,
    state: prepared.statePath,
    outDir: prepared.outDir,
    log: prepared.logPath,
    rehearsal: options.simulate,
    simulated: prepared.simulated,
    ...summary,
    results,
    ...(problem ? { resultsProblem: problem } : {}),
    ...(prepared.outputs.publishing?.abandoned ? { leftToNextRun: true } : {}),
    exitCode: runExitCode(summary, problem),
  };
}

/** results.jsonl, results.csv and the gallery: what happens to them is said, and decides exit 4 (see runExitCode). */
async function writeResults(
  prepared: PreparedRun,
  options: ResolvedRunOptions,
  logger: Logger,
): Promise<{ results: RunOutcome['results']; problem?: string }> {
  try {
    const { writeReport } = await import('../report/index.js'); // needed at the end only: not loaded before the first submission
    const written = await writeReport(prepared.store, prepared.outputs, {
      title: prepared.manifest.name,
      html: true,
      sidecars: options.sidecars,
      now: Date.now(),
      budget: prepared.budget ?? null,
    });
    return {
      results: {
        jsonl: written.jsonl,
        csv: written.csv,
        html: written.html ?? null,
        ...(written.sidecars !== undefined ? { sidecars: written.sidecars } : {}),
      },
    };
  } catch (error) {
    // A full disk, say: the state has it all, and `genbatch report` writes them once that is fixed.
    logger.error({ err: error }, 'report not written');
    return { results: null, problem: (error as Error).message };
  }
}

/** A notifier when --notify or --notify-command asks for one. */
function notifierFor(options: ResolvedRunOptions, prepared: PreparedRun, logger: Logger): Notifier | undefined {
  if (!options.notify) return undefined;
  const store: Store = prepared.store;
  return new Notifier({
    ...options.notify,
    run: store.meta('run_id') ?? runIdFor(prepared.manifest, prepared.outDir),
    manifest: prepared.manifest.source.absPath,
    stallMs: options.stallMs,
    snapshot: () => ({ counts: store.itemReports.counts(), credits: store.attempts.totals() }),
    logger,
  });
}
