import { keyTextsIn } from '../../api/key-pool.js';
import type { Logger } from '../../log/logger.js';
import { Notifier } from '../../notify/notifier.js';
import {
  prepareRun,
  runIdFor,
  startRun,
  type CanarySize,
  type PreparedRun,
  type RunRequest,
  type RunSummary,
} from '../../runner/index.js';
import { DEFAULT_KEY_LIMITS, type KeyLimits, type Rate } from '../../scheduler/limits.js';
import type { Store } from '../../store/index.js';
import { connect, type ConnectionFlags } from '../connection.js';
import { usageError } from '../exit.js';
import { endOfRunText } from '../end-of-run.js';
import { bucketSecretsIn } from '../../sink/index.js';
import { RUN_FLAGS, withDefaults } from '../flags.js';
import { count, num, paintFor } from '../format.js';
import { Progress } from '../progress.js';
import { warningReport } from '../../manifest/load-valid.js';

export interface RunFlags extends ConnectionFlags {
  state?: string;
  out?: string;
  submitRate?: Rate;
  readRate?: Rate;
  uploadRate?: Rate;
  maxImagesInFlight?: number;
  maxVideosInFlight?: number;
  dailyCap?: number;
  maxCredits?: number;
  pollWait?: number;
  maxRetries?: number;
  maxBlocked?: number;
  canary?: CanarySize;
  canaryMaxFailures?: number;
  notify?: string;
  notifyCommand?: string;
  stallMinutes?: number;
  unreachableMinutes?: number;
  only?: string[];
  redoChanged?: boolean;
  redoRejected?: boolean;
  timeScale?: number;
  maxOutputMb?: number;
  idleTimeout?: number;
  keepLocal?: boolean;
  maxUnpublishedMb?: number;
  sidecars?: boolean;
  coordinator?: string;
}

/** The key's limits with time scaled, then the explicit flags (the others at their declared defaults). */
function limitsFrom(f: RunFlags, timeScale: number): KeyLimits {
  const scale = (r: Rate): Rate => ({ count: r.count, windowMs: r.windowMs / timeScale });
  return {
    submit: f.submitRate ?? scale(DEFAULT_KEY_LIMITS.submit),
    read: f.readRate ?? scale(DEFAULT_KEY_LIMITS.read),
    upload: f.uploadRate ?? scale(DEFAULT_KEY_LIMITS.upload),
    imagesInFlight: f.maxImagesInFlight!,
    videosInFlight: f.maxVideosInFlight!,
    dailyCap: f.dailyCap!,
  };
}

/** What `run --json` prints: the run's summary, where things are, and the results files written. */
export type RunResult = RunSummary & {
  manifest: string;
  state: string;
  outDir: string;
  log: string;
  rehearsal: boolean;
  results: { jsonl: string; csv: string; html: string | null } | null;
};

export interface RunHandle {
  /** Stops submitting at once; in-flight requests finish writing state. */
  interrupt(): void;
  /** What to tell a user who interrupts: how to go on from here. */
  resumeHint: string;
  done: Promise<{ summary: RunSummary; report: string; json: RunResult }>;
}

/** What a run's command line settles before anything is read: a rehearsal or not, the time scale, how long to wait for the service. */
export async function runCommand(
  path: string,
  flags: RunFlags,
  env: NodeJS.ProcessEnv,
  cwd: string,
  progressOut: NodeJS.WriteStream,
  reportOut: { isTTY?: boolean },
): Promise<RunHandle> {
  checkNotifyFlags(flags);
  checkOnlyFlags(flags);
  const request = requestOf(path, flags, env, cwd, progressOut);
  // Connected at once: each key's /me is on its way while the manifest is read and checked.
  const prepared = await prepareRun(request, connect(flags, env, request.timeScale));
  const { store } = prepared;
  const progress = progressFor(progressOut, store, prepared, request.timeScale, env);
  const started = startRun(prepared, request);
  started.runner.events.on(progress.onEvent);
  const notifier = notifierFor(flags, {
    run: store.meta('run_id') ?? runIdFor(prepared.manifest.source.absPath, prepared.manifest.name),
    manifest: prepared.manifest.source.absPath,
    store,
    logger: started.logger,
  });
  if (notifier) started.runner.events.on(notifier.onEvent);
  const shown = { progress, notifier, logger: started.logger };
  sayStart(progressOut, request, prepared, shown);
  const done = started.runner
    .run()
    .then((summary) => finishRun(summary, path, flags, env, request, prepared, shown, reportOut))
    .finally(async () => {
      notifier?.stop();
      progress.stop();
      started.logger.info('run ended');
      await started.close();
    });
  const resumeHint = flags.simulate
    ? 'A rehearsal starts over each time: nothing of it is resumed.'
    : 'The state is saved: run the same command to resume; nothing is paid twice.';
  return { interrupt: () => started.runner.stop('interrupted', `interrupted. ${resumeHint}`), resumeHint, done };
}

/** What the flags ask of the run, settled once: the one place a flag becomes a setting of the run. */
function requestOf(
  path: string,
  given: RunFlags,
  env: NodeJS.ProcessEnv,
  cwd: string,
  progressOut: NodeJS.WriteStream,
): RunRequest {
  const flags = withDefaults(given, RUN_FLAGS);
  const rehearsal = flags.simulate ?? false;
  const timeScale = flags.timeScale ?? (rehearsal ? 60 : 1);
  const minutes = flags.unreachableMinutes!;
  return {
    manifestPath: path,
    cwd,
    rehearsal,
    timeScale,
    statePath: flags.state,
    out: flags.out,
    redoChanged: flags.redoChanged ?? false,
    redoRejected: flags.redoRejected ?? false,
    limits: limitsFrom(flags, timeScale),
    coordinatorUrl: flags.coordinator ?? env.GENBATCH_COORDINATOR,
    // A service that answers nothing yet is waited for, as a run waits for it (--unreachable-minutes).
    waitForService: {
      unreachableMs: minutes * 60_000,
      everyMs: Math.min(1_000, Math.max(100, 1_000 / timeScale)),
      onWait: (reason: string) =>
        progressOut.write(
          `the service is unreachable (${reason}); waiting for it, up to ${num(minutes)} minutes (Ctrl-C stops; nothing was sent)\n`,
        ),
    },
    secrets: [...keyTextsIn(env), ...bucketSecretsIn(env)],
    keepLocal: flags.keepLocal ?? false,
    env,
    options: {
      pollWaitSeconds: flags.pollWait!,
      maxRetries: flags.maxRetries!,
      ...(flags.maxCredits !== undefined ? { maxCredits: flags.maxCredits } : {}),
      maxBlocked: flags.maxBlocked!,
      ...(flags.canary ? { canary: { size: flags.canary, maxFailures: flags.canaryMaxFailures! } } : {}),
      ...(flags.only ? { only: flags.only } : {}),
      downloadConcurrency: 4,
      maxOutputBytes: flags.maxOutputMb! * 1024 * 1024,
      idleTimeoutMs: flags.idleTimeout! * 1000,
      maxUnpublishedBytes: flags.maxUnpublishedMb! * 1024 * 1024,
    },
  };
}

function progressFor(
  out: NodeJS.WriteStream,
  store: Store,
  prepared: Pick<PreparedRun, 'itemCount' | 'pool' | 'outputs'>,
  timeScale: number,
  env: NodeJS.ProcessEnv,
): Progress {
  const { pool } = prepared;
  return new Progress(out, store, prepared.itemCount, {
    publishing: prepared.outputs.publishing !== undefined,
    keys: pool.keys.map((k) => k.fingerprint),
    // The keys' limits are in real time already (the service's window divided by the time scale).
    pace: {
      limit: pool.keys.reduce((n, k) => n + k.limits.submit.count, 0),
      windowMs: pool.keys[0]!.limits.submit.windowMs * timeScale,
      timeScale,
    },
    env,
  });
}

/** What shows a run's progress. */
interface Shown {
  progress: Progress;
  notifier: Notifier | undefined;
  logger: Logger;
}

/** What the run says before its first submission: warnings, refused keys, the keys, a resume, a rehearsal. */
function sayStart(out: NodeJS.WriteStream, request: RunRequest, prepared: PreparedRun, shown: Shown): void {
  const { pool, manifest, statePath } = prepared;
  if (prepared.warnings.length) out.write(`${warningReport(prepared.warnings)}\n`);
  for (const r of pool.refused)
    out.write(
      `the key ${r.fingerprint} was refused (${r.code}: ${r.message}); the run goes on with the other ${count(pool.keys.length, 'key')}\n`,
    );
  if (pool.keys.length > 1)
    out.write(
      `${pool.keys.length} keys: ${pool.keys.map((k) => `${k.fingerprint} (${k.limits.submit.count}/${formatWindow(k.limits.submit.windowMs * request.timeScale)}, cap ${num(k.limits.dailyCap)})`).join(', ')}\n`,
    );
  if (prepared.resumed)
    out.write(
      `resuming: ${manifest.source.file} and its files are as the state last saw them; ${count(prepared.itemCount, 'item')} read from the state, not expanded again\n`,
    );
  if (request.redoRejected) {
    const n = prepared.redoneRejected.length;
    out.write(
      n
        ? `regenerating ${count(n, 'item')} rejected in review (one new attempt each; the rejected outputs stay on disk as earlier versions)\n`
        : 'no item is rejected in review: nothing to regenerate\n',
    );
  }
  if (request.rehearsal)
    out.write(
      `rehearsal on the embedded simulator (no key, no credits, time x${request.timeScale}): ${request.redoRejected ? 'it goes on with its own state to redo its rejects' : 'it starts over each time'}; outputs go to ${prepared.outDir}, the state to ${statePath}\n`,
    );
  shown.progress.start();
  shown.notifier?.start();
  shown.logger.info(
    { manifest: manifest.source.absPath, state: statePath, outDir: prepared.outDir, timeScale: request.timeScale },
    'run started',
  );
}

/** The run ended: its results files, the notification, and what to print. */
async function finishRun(
  summary: RunSummary,
  path: string,
  flags: RunFlags,
  env: NodeJS.ProcessEnv,
  request: RunRequest,
  prepared: PreparedRun,
  shown: Shown,
  reportOut: { isTTY?: boolean },
): Promise<{ summary: RunSummary; report: string; json: RunResult }> {
  const { outDir, logPath } = prepared;
  const { results, files } = await writeResults(prepared, flags, shown.logger);
  const json: RunResult = {
    manifest: prepared.manifest.source.file,
    state: prepared.statePath,
    outDir,
    log: logPath,
    rehearsal: request.rehearsal,
    ...summary,
    results,
  };
  const total = Object.values(summary.counts).reduce((a, b) => a + b, 0);
  await shown.notifier?.ended(summary.stop?.message ?? `finished: ${summary.counts.done} of ${total} items done`);
  const text = endOfRunText(summary, outDir, request.cwd, logPath, path, paintFor(reportOut, env));
  return { summary, report: `${text}\n${files}`, json };
}

/** results.jsonl, results.csv and the gallery; the run's outcome stands whatever happens to them. */
async function writeResults(
  prepared: PreparedRun,
  flags: RunFlags,
  logger: Logger,
): Promise<{ results: RunResult['results']; files: string }> {
  try {
    const { writeReport } = await import('../../report/index.js'); // needed at the end only: not loaded before the first submission
    const written = await writeReport(prepared.store, prepared.outputs, {
      title: prepared.manifest.name,
      html: true,
      sidecars: flags.sidecars ?? false,
      now: Date.now(),
      budget: prepared.budget ?? null,
    });
    const sidecars = written.sidecars !== undefined ? `\nsidecars: ${written.sidecars} next to the outputs` : '';
    return {
      results: { jsonl: written.jsonl, csv: written.csv, html: written.html ?? null },
      files: `results: ${written.jsonl}, ${written.csv}\ngallery: ${written.html}${sidecars}`,
    };
  } catch (error) {
    // A full disk, say: the state has it all.
    logger.error({ err: error }, 'report not written');
    return {
      results: null,
      files: `the results could not be written (${(error as Error).message}); genbatch report writes them from the state once that is fixed`,
    };
  }
}

/** A window in the service's own time, as a user gives it (60s, 1m). */
function formatWindow(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 100) / 10}s`;
}

function checkOnlyFlags(flags: RunFlags): void {
  if (!flags.only) return;
  if (flags.canary) throw usageError('--only and --canary each choose what runs first: give one of them.');
  const empty = flags.only.find((s) => s === 'tag:' || s === '');
  if (empty !== undefined) throw usageError(`--only "${empty}": give an id, a glob, or tag:NAME.`);
}

function checkNotifyFlags(flags: RunFlags): void {
  if (flags.notify && flags.notifyCommand)
    throw usageError('--notify and --notify-command each say where events go: give one of them.');
  if (flags.notify && !/^https?:\/\/[^/]/i.test(flags.notify))
    throw usageError(`--notify takes an http(s) URL; got one that is not (it is not shown: it may hold a secret).`);
  if (flags.stallMinutes !== undefined && !flags.notify && !flags.notifyCommand)
    throw usageError('--stall-minutes says when to notify of a stall: give --notify URL or --notify-command CMD too.');
}

/** A notifier when --notify or --notify-command asks for one. */
function notifierFor(
  flags: RunFlags,
  ctx: { run: string; manifest: string; store: Store; logger: Logger },
): Notifier | undefined {
  if (!flags.notify && !flags.notifyCommand) return undefined;
  return new Notifier({
    ...(flags.notify ? { url: flags.notify } : { command: flags.notifyCommand! }),
    run: ctx.run,
    manifest: ctx.manifest,
    stallMs: withDefaults(flags, RUN_FLAGS).stallMinutes! * 60_000,
    snapshot: () => ({ counts: ctx.store.itemReports.counts(), credits: ctx.store.attempts.totals() }),
    logger: ctx.logger,
  });
}
