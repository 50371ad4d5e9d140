import { createWriteStream, existsSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Catalog } from '../../api/catalog.js';
import { untilAnswered, type UntilAnsweredOptions } from '../../api/until-answered.js';
import { keyTextsIn } from '../../api/key-pool.js';
import { createLogger, type Logger } from '../../log/logger.js';
import type { ManifestTop } from '../../manifest/index.js';
import { IssueList } from '../../manifest/index.js';
import { checkAgainstService, shapeProblems } from '../../manifest/online.js';
import { Notifier } from '../../notify/notifier.js';
import type { CanarySize } from '../../runner/canary.js';
import { Runner, type RunEvent, type RunOptions, type RunSummary } from '../../runner/index.js';
import { runIdFor } from '../../runner/keys.js';
import { setUpPool, type PoolSetup } from '../../runner/pool.js';
import type { Coordinator } from '../../coordinator/postgres.js';
import { describeCoordinator } from '../../coordinator/url.js';
import { planResume } from '../../runner/resume.js';
import { DEFAULT_KEY_LIMITS, type KeyLimits, type Rate } from '../../scheduler/limits.js';
import { OPEN_STATES, Store } from '../../store/index.js';
import { connect, type Connection, type ConnectionFlags } from '../connection.js';
import { EXIT, ExitError, usageError } from '../exit.js';
import { count, num, paintFor, type Paint } from '../format.js';
import { Progress } from '../progress.js';
import { openStateReadOnly, statePathFor } from '../state-path.js';
import { checkValid, issueReport, loadValid, warningReport } from './manifest-load.js';

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
  timeScale?: number;
  maxOutputMb?: number;
  sidecars?: boolean;
  coordinator?: string;
}

/** The key's limits with time scaled, then the explicit flags. */
function limitsFrom(f: RunFlags, timeScale: number): KeyLimits {
  const scale = (r: Rate): Rate => ({ count: r.count, windowMs: r.windowMs / timeScale });
  return {
    submit: f.submitRate ?? scale(DEFAULT_KEY_LIMITS.submit),
    read: f.readRate ?? scale(DEFAULT_KEY_LIMITS.read),
    upload: f.uploadRate ?? scale(DEFAULT_KEY_LIMITS.upload),
    imagesInFlight: f.maxImagesInFlight ?? DEFAULT_KEY_LIMITS.imagesInFlight,
    videosInFlight: f.maxVideosInFlight ?? DEFAULT_KEY_LIMITS.videosInFlight,
    dailyCap: f.dailyCap ?? DEFAULT_KEY_LIMITS.dailyCap,
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
interface RunBasics {
  cwd: string;
  rehearsal: boolean;
  timeScale: number;
  waitForService: UntilAnsweredOptions;
  statePathOf: (top: ManifestTop) => string;
}

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
  const basics = basicsOf(flags, cwd, progressOut);
  // Each key's /me is on its way while the manifest is read and checked: a round trip less before the first submission.
  const keys = askKeys(flags, env, basics.timeScale, basics.waitForService);
  const prepared = await prepareManifest(path, flags, cwd, basics).catch(async (error: unknown) => {
    // The manifest's problem is what the user hears about, not the service's answer.
    await keys.discard();
    throw error;
  });
  const opened = await openService(path, cwd, flags, env, basics, keys, prepared);
  const started = startRun(flags, env, basics, prepared, opened, progressOut);
  sayStart(progressOut, basics, prepared, opened, started);
  const done = started.runner
    .run()
    .then((summary) => finishRun(summary, path, flags, env, basics, prepared, opened.store, started, reportOut))
    .finally(() => closeRun(started, opened));
  const resumeHint = flags.simulate
    ? 'A rehearsal starts over each time: nothing of it is resumed.'
    : 'The state is saved: run the same command to resume; nothing is paid twice.';
  return { interrupt: () => started.runner.stop('interrupted', `interrupted. ${resumeHint}`), resumeHint, done };
}

function basicsOf(flags: RunFlags, cwd: string, progressOut: NodeJS.WriteStream): RunBasics {
  const rehearsal = flags.simulate ?? false;
  const timeScale = flags.timeScale ?? (rehearsal ? 60 : 1);
  const minutes = flags.unreachableMinutes ?? 30;
  return {
    cwd,
    rehearsal,
    timeScale,
    // A service that answers nothing yet is waited for, as a run waits for it (--unreachable-minutes).
    waitForService: {
      unreachableMs: minutes * 60_000,
      everyMs: Math.min(1_000, Math.max(100, 1_000 / timeScale)),
      onWait: (reason: string) =>
        progressOut.write(
          `the service is unreachable (${reason}); waiting for it, up to ${num(minutes)} minutes (Ctrl-C stops; nothing was sent)\n`,
        ),
    },
    statePathOf: (top) => statePathFor(top, flags.state, cwd, rehearsal && !flags.state),
  };
}

/** The manifest as the run takes it: checked (not held), or its items read back from the state on a resume. */
interface PreparedManifest {
  plan: Awaited<ReturnType<typeof planResume>>;
  checked: Awaited<ReturnType<typeof checkValid>> | undefined;
  manifest: ManifestTop;
  statePath: string;
}

async function prepareManifest(
  path: string,
  flags: RunFlags,
  cwd: string,
  basics: RunBasics,
): Promise<PreparedManifest> {
  // A resume whose sources are unchanged takes its items from the state (a rehearsal starts over, --redo-changed looks at each item).
  const plan = basics.rehearsal ? {} : await planResume(path, cwd, basics.statePathOf, !flags.redoChanged);
  // Checked without holding the items: the run expands them again as it writes them into the state.
  const checked = plan.resume ? undefined : await checkValid(path, cwd, plan.top, plan.rowsRead);
  // The top level only: the items live in the state once synced, not in memory for the whole run.
  const manifest = plan.resume?.top ?? topOf(checked!);
  const statePath = basics.statePathOf(manifest);
  // A fresh in-process simulator knows none of an earlier run's jobs: a rehearsal starts over, and never on a real run's state.
  if (basics.rehearsal) startRehearsalOver(statePath, !flags.state);
  return { plan, checked, manifest, statePath };
}

/** The service as the run uses it: the keys that work, the coordinator, the catalog, and the state opened. */
interface OpenedService {
  connection: Connection;
  pool: PoolSetup;
  coordinator: Coordinator | undefined;
  catalog: Catalog;
  store: Store;
}

async function openService(
  path: string,
  cwd: string,
  flags: RunFlags,
  env: NodeJS.ProcessEnv,
  basics: RunBasics,
  keys: ReturnType<typeof askKeys>,
  prepared: PreparedManifest,
): Promise<OpenedService> {
  const connection = await keys.connecting;
  const shapes = prepared.plan.resume ? prepared.plan.resume.shapes : prepared.checked!.shapes;
  const types = new Set(shapes.map((s) => s.type));
  // The catalog is asked of the first key while the keys' /me answers may still be on their way.
  const firstKey = connection.keys[0]!;
  const earlyCatalog = Catalog.fetch(firstKey.client, types).catch(() => undefined);
  let coordinator: Coordinator | undefined;
  try {
    const pool = await keys.pool;
    if (pool.keys.length === 0)
      throw new ExitError(
        EXIT.stopped,
        `the service refused every key of GENBATCH_API_KEYS: ${pool.refused.map((r) => `${r.fingerprint} ${r.code}`).join(', ')}. Nothing was submitted.`,
      );
    coordinator = await openCoordinator(flags.coordinator ?? env.GENBATCH_COORDINATOR, basics.timeScale);
    // The service's view (models, kinds, modes, allowed values, scopes): a mismatch is exit 2 before anything is sent.
    // Asked again of the pool's first key if the first key was refused or the early answer failed, as it was asked before.
    const early = pool.keys[0]!.fingerprint === firstKey.fingerprint ? await earlyCatalog : undefined;
    const catalog =
      early ?? (await untilAnswered(() => Catalog.fetch(pool.keys[0]!.client, types), basics.waitForService));
    await checkShapes(path, cwd, shapes, prepared.manifest, catalog, pool);
    return { connection, pool, coordinator, catalog, store: Store.open(prepared.statePath) };
  } catch (error) {
    await coordinator?.close();
    await connection.close();
    throw error;
  }
}

/** The items' shapes (the checked manifest's, or the state's) pass, or the whole manifest is loaded to say where each problem is. */
async function checkShapes(
  path: string,
  cwd: string,
  shapes: Parameters<typeof shapeProblems>[0],
  manifest: ManifestTop,
  catalog: Catalog,
  pool: PoolSetup,
): Promise<void> {
  if (shapeProblems(shapes, manifest.source, catalog, pool.scopes) === 0) return;
  const loaded = await loadValid(path, cwd);
  const issues = new IssueList();
  checkAgainstService(loaded.items, loaded.source, catalog, pool.scopes, issues);
  if (issues.count > 0) throw new ExitError(EXIT.usage, issueReport(issues));
  // Its items no longer are what was checked: nothing is sent on a guess.
  throw new ExitError(
    EXIT.usage,
    `${path} or its files changed while they were checked; nothing was submitted. Run the same command again.`,
  );
}

/** A run under way: its runner, where it writes, and what shows its progress. */
interface StartedRun {
  runner: Runner;
  outDir: string;
  logPath: string;
  logFile: ReturnType<typeof createWriteStream>;
  logger: Logger;
  progress: Progress;
  notifier: Notifier | undefined;
  itemCount: number;
  resumed: boolean;
}

function startRun(
  flags: RunFlags,
  env: NodeJS.ProcessEnv,
  basics: RunBasics,
  prepared: PreparedManifest,
  opened: OpenedService,
  progressOut: NodeJS.WriteStream,
): StartedRun {
  const { manifest, statePath, checked, plan } = prepared;
  const { store, pool, coordinator, catalog, connection } = opened;
  const itemCount = checked ? checked.count : plan.resume!.synced.items;
  // A rehearsal never writes where a real run's outputs are.
  const suffix = flags.simulate ? '.simulated' : '';
  const outDir = `${flags.out ? resolve(basics.cwd, flags.out) : manifest.outputDir}${suffix}`;
  const logPath = join(dirname(statePath), `${manifest.name}${suffix}.log`);
  mkdirSync(dirname(logPath), { recursive: true });
  const logFile = createWriteStream(logPath, { flags: 'a' });
  const secrets = [...keyTextsIn(env), connection.simulator?.apiKey ?? ''].filter(Boolean);
  const logger = createLogger({ secrets, destination: logFile });
  const progress = progressFor(progressOut, store, itemCount, pool, basics.timeScale, env);
  const notifier = notifierFor(flags, {
    run: store.meta('run_id') ?? runIdFor(manifest.source.absPath, manifest.name),
    manifest: manifest.source.absPath,
    store,
    logger,
  });
  const onEvent = (event: RunEvent) => {
    progress.onEvent(event);
    notifier?.onEvent(event);
  };
  // The keys as the run gets them, each with the coordinator its limits are shared through (if any).
  const laneKeys = pool.keys.map((key) => ({ ...key, coordinator }));
  const options = runOptionsFrom(flags, manifest, basics, { outDir, logger, onEvent });
  // The runner holds what it needs of the checked manifest until its items are written.
  const toSync = checked ? { items: checked, fingerprint: plan.fingerprint } : undefined;
  const runner = new Runner(laneKeys, store, manifest, options, catalog, toSync);
  return { runner, outDir, logPath, logFile, logger, progress, notifier, itemCount, resumed: !toSync };
}

function progressFor(
  out: NodeJS.WriteStream,
  store: Store,
  itemCount: number,
  pool: PoolSetup,
  timeScale: number,
  env: NodeJS.ProcessEnv,
): Progress {
  return new Progress(out, store, itemCount, {
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

/** The run's options from its flags and manifest: the one place a flag becomes a setting of the run. */
function runOptionsFrom(
  flags: RunFlags,
  manifest: ManifestTop,
  basics: RunBasics,
  io: { outDir: string; logger: Logger; onEvent: (event: RunEvent) => void },
): RunOptions {
  const maxCredits = flags.maxCredits ?? manifest.manifest.budget?.maxCredits;
  return {
    outDir: io.outDir,
    rehearsal: basics.rehearsal,
    pollWaitSeconds: flags.pollWait ?? 30,
    maxRetries: flags.maxRetries ?? 2,
    ...(maxCredits !== undefined ? { maxCredits } : {}),
    maxBlocked: flags.maxBlocked ?? 20,
    ...(flags.canary ? { canary: { size: flags.canary, maxFailures: flags.canaryMaxFailures ?? 0 } } : {}),
    redoChanged: flags.redoChanged ?? false,
    timeScale: basics.timeScale,
    unreachableMs: basics.waitForService.unreachableMs,
    ...(flags.only ? { only: flags.only } : {}),
    downloadConcurrency: 4,
    maxOutputBytes: (flags.maxOutputMb ?? 2048) * 1024 * 1024,
    now: Date.now,
    logger: io.logger,
    onEvent: io.onEvent,
  };
}

/** What the run says before its first submission: warnings, refused keys, the keys, a resume, a rehearsal. */
function sayStart(
  out: NodeJS.WriteStream,
  basics: RunBasics,
  prepared: PreparedManifest,
  opened: OpenedService,
  started: StartedRun,
): void {
  const { pool } = opened;
  const { manifest, statePath } = prepared;
  const warnings = prepared.checked?.warnings ?? [];
  if (warnings.length) out.write(`${warningReport(warnings)}\n`);
  for (const r of pool.refused)
    out.write(
      `the key ${r.fingerprint} was refused (${r.code}: ${r.message}); the run goes on with the other ${count(pool.keys.length, 'key')}\n`,
    );
  if (pool.keys.length > 1)
    out.write(
      `${pool.keys.length} keys: ${pool.keys.map((k) => `${k.fingerprint} (${k.limits.submit.count}/${formatWindow(k.limits.submit.windowMs * basics.timeScale)}, cap ${num(k.limits.dailyCap)})`).join(', ')}\n`,
    );
  if (started.resumed)
    out.write(
      `resuming: ${manifest.source.file} and its files are as the state last saw them; ${count(started.itemCount, 'item')} read from the state, not expanded again\n`,
    );
  if (basics.rehearsal)
    out.write(
      `rehearsal on the embedded simulator (no key, no credits, time x${basics.timeScale}): it starts over each time; outputs go to ${started.outDir}, the state to ${statePath}\n`,
    );
  started.progress.start();
  started.notifier?.start();
  started.logger.info(
    { manifest: manifest.source.absPath, state: statePath, outDir: started.outDir, timeScale: basics.timeScale },
    'run started',
  );
}

/** The run ended: its results files, the notification, and what to print. */
async function finishRun(
  summary: RunSummary,
  path: string,
  flags: RunFlags,
  env: NodeJS.ProcessEnv,
  basics: RunBasics,
  prepared: PreparedManifest,
  store: Store,
  started: StartedRun,
  reportOut: { isTTY?: boolean },
): Promise<{ summary: RunSummary; report: string; json: RunResult }> {
  const { outDir, logPath } = started;
  const { results, files } = await writeResults(store, prepared.manifest.name, flags, started);
  const json: RunResult = {
    manifest: prepared.manifest.source.file,
    state: prepared.statePath,
    outDir,
    log: logPath,
    rehearsal: basics.rehearsal,
    ...summary,
    results,
  };
  const total = Object.values(summary.counts).reduce((a, b) => a + b, 0);
  await started.notifier?.ended(summary.stop?.message ?? `finished: ${summary.counts.done} of ${total} items done`);
  const text = report(summary, outDir, basics.cwd, logPath, path, paintFor(reportOut, env));
  return { summary, report: `${text}\n${files}`, json };
}

/** results.jsonl, results.csv and the gallery; the run's outcome stands whatever happens to them. */
async function writeResults(
  store: Store,
  title: string,
  flags: RunFlags,
  started: StartedRun,
): Promise<{ results: RunResult['results']; files: string }> {
  try {
    const { writeReport } = await import('../../report/index.js'); // needed at the end only: not loaded before the first submission
    const written = await writeReport(store, started.outDir, {
      title,
      html: true,
      sidecars: flags.sidecars ?? false,
      now: Date.now(),
    });
    const sidecars = written.sidecars !== undefined ? `\nsidecars: ${written.sidecars} next to the outputs` : '';
    return {
      results: { jsonl: written.jsonl, csv: written.csv, html: written.html ?? null },
      files: `results: ${written.jsonl}, ${written.csv}\ngallery: ${written.html}${sidecars}`,
    };
  } catch (error) {
    // A full disk, say: the state has it all.
    started.logger.error({ err: error }, 'report not written');
    return {
      results: null,
      files: `the results could not be written (${(error as Error).message}); genbatch report writes them from the state once that is fixed`,
    };
  }
}

/** Whatever the run's end: the progress stops, the log is on disk and closed, the state and connections closed. */
async function closeRun(started: StartedRun, opened: OpenedService): Promise<void> {
  started.notifier?.stop();
  started.progress.stop();
  started.logger.info('run ended');
  // Its last line is on disk and its file closed when the command returns (a command run in a longer-lived process leaves no descriptor open).
  await new Promise((resolve) => started.logFile.end(resolve));
  opened.store.close();
  await opened.coordinator?.close();
  await opened.connection.close();
}

/** The connection, then each key's view (scopes, its own limits and cap; a key the service refuses is left out); nothing awaited until the caller wants them. */
function askKeys(
  flags: RunFlags,
  env: NodeJS.ProcessEnv,
  timeScale: number,
  wait: UntilAnsweredOptions,
): { connecting: Promise<Connection>; pool: Promise<PoolSetup>; discard: () => Promise<void> } {
  const connecting = connect(flags, env, timeScale);
  // Discarded (the manifest failed first): a wait for the service ends at once.
  const discarded = new AbortController();
  const pool = connecting.then((connection) =>
    untilAnswered(() => setUpPool(connection.keys, limitsFrom(flags, timeScale), timeScale), {
      ...wait,
      signal: discarded.signal,
    }),
  );
  // Awaited later, or never when the manifest fails first: a failure meanwhile is no unhandled rejection.
  pool.catch(() => {});
  return {
    connecting,
    pool,
    discard: async () => {
      discarded.abort();
      await pool.catch(() => {});
      await (await connecting.catch(() => undefined))?.close();
    },
  };
}

/**
 * The coordinator named by --coordinator or GENBATCH_COORDINATOR, its schema
 * migrated; none without one. Its leases last a minute of the service's time
 * (2 s at the least): a process that dies frees its slots that much later.
 */
async function openCoordinator(url: string | undefined, timeScale: number): Promise<Coordinator | undefined> {
  if (!url) return undefined;
  if (!/^postgres(ql)?:\/\//i.test(url))
    throw usageError(`--coordinator takes a postgres:// URL; got one that is not (${describeCoordinator(url)}).`);
  try {
    // Loaded only when asked for: pg costs a run without a coordinator nothing at start.
    const { Coordinator } = await import('../../coordinator/postgres.js');
    return await Coordinator.open(url, { leaseMs: Math.max(2_000, 60_000 / timeScale) });
  } catch (error) {
    throw new ExitError(
      EXIT.environment,
      `${(error as Error).message}\nThe coordinator at ${describeCoordinator(url)} cannot be used; nothing was submitted. Check that it is reachable (or leave out --coordinator to pace this process alone), then run the same command again.`,
    );
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
    stallMs: (flags.stallMinutes ?? 30) * 60_000,
    snapshot: () => ({ counts: ctx.store.itemReports.counts(), credits: ctx.store.attempts.totals() }),
    logger: ctx.logger,
  });
}

function topOf({ source, manifest, name, outputDir, outputName, vars }: ManifestTop): ManifestTop {
  return { source, manifest, name, outputDir, outputName, vars };
}

/** Problem items the end of a run names with their message; status lists them all. */
const PROBLEMS_SHOWN = 10;

function report(
  s: RunSummary,
  outDir: string,
  cwd: string,
  logPath: string,
  manifestArg: string,
  paint: Paint,
): string {
  const c = s.counts;
  const open = OPEN_STATES.reduce((n, state) => n + c[state], 0);
  const total = Object.values(c).reduce((a, b) => a + b, 0);
  const bad = c.failed + c.rejected + c.blocked + c.skipped;
  const lines = [
    (c.done === total ? paint.green : (t: string) => t)(`done ${num(c.done)}/${num(total)}`) +
      (bad
        ? paint.red(
            `, failed ${num(c.failed)}, rejected ${num(c.rejected)}, blocked ${num(c.blocked)}, skipped ${num(c.skipped)}`,
          )
        : '') +
      (open ? paint.yellow(`, not finished ${open}`) : ''),
    `credits: ${num(s.credits.charged)} charged, ${num(s.credits.refunded)} refunded, ${num(s.credits.charged - s.credits.refunded)} net`,
    `outputs: ${resolve(cwd, outDir)}`,
    `log: ${logPath}`,
  ];
  lines.push(...failureLines(s, paint, manifestArg));
  if (s.changed.length)
    lines.push(
      `${count(s.changed.length, 'item')} changed after they were submitted and keep their result (--redo-changed resubmits them): ${s.changed.slice(0, 5).join(', ')}${s.changed.length > 5 ? ', …' : ''}`,
    );
  lines.push(...keyLines(s, paint));
  return [...lines, ...afterwardLines(s, paint, manifestArg)].join('\n');
}

/** The failures by code, and the first problem items with their message. */
function failureLines(s: RunSummary, paint: Paint, manifestArg: string): string[] {
  if (!Object.keys(s.failures).length) return [];
  const byCode = Object.entries(s.failures)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const lines = [paint.red(`failures by code: ${byCode}`)];
  const shown = s.problems.slice(0, PROBLEMS_SHOWN);
  for (const p of shown) lines.push(`  ${paint.bold(p.id)} (${p.state}) ${paint.red(p.code)}: ${p.message}`);
  const total = Object.values(s.failures).reduce((a, b) => a + b, 0);
  if (total > shown.length)
    lines.push(`  … and ${count(total - shown.length, 'more item')}: genbatch status ${manifestArg} lists them all`);
  return lines;
}

/** Keys refused during the run, and keys the run lacks, with the items that wait for each. */
function keyLines(s: RunSummary, paint: Paint): string[] {
  const lines: string[] = [];
  for (const [fingerprint, r] of Object.entries(s.keysRefused)) {
    lines.push(
      paint.yellow(
        `the key ${fingerprint} was refused during the run (${r.code}: ${r.message})${r.waiting ? `; ${count(r.waiting, 'item')} sent with it wait${r.waiting === 1 ? 's' : ''} for it (${r.waiting === 1 ? 'it' : 'they'} may have been accepted: resent or read with another key, ${r.waiting === 1 ? 'it' : 'they'} could be paid for twice)` : ''}`,
      ),
    );
  }
  for (const [fingerprint, n] of Object.entries(s.keysMissing)) {
    lines.push(
      `${count(n, 'item')} ${n === 1 ? 'was' : 'were'} sent with the API key whose fingerprint is ${fingerprint}, which this run does not have: ${n === 1 ? 'it waits' : 'they wait'} for a run with that key (resent or read with another key, ${n === 1 ? 'it' : 'they'} could be paid for twice)`,
    );
  }
  return lines;
}

/** What was left for later, why the run stopped, and what can be done about what failed. */
function afterwardLines(s: RunSummary, paint: Paint, manifestArg: string): string[] {
  const c = s.counts;
  const lines: string[] = [];
  if (s.notSelected)
    lines.push(
      `${count(s.notSelected, 'item')} not selected by --only ${s.notSelected === 1 ? 'waits' : 'wait'} for a later run (the same command without --only runs ${s.notSelected === 1 ? 'it' : 'them'})`,
    );
  if (s.removed)
    lines.push(
      `${count(s.removed, 'item')} of an earlier version of the manifest ${s.removed === 1 ? 'is' : 'are'} no longer in it: not run and not counted here; what ${s.removed === 1 ? 'it' : 'they'} already had stays in the state and the output dir`,
    );
  if (s.stop) lines.push(paint.yellow(`stopped: ${s.stop.message}`));
  // What can be done about what failed, in the user's own words.
  const retryable = c.failed + c.skipped;
  if (retryable)
    lines.push(
      `to submit the ${count(retryable, 'failed or skipped item')} again (new attempts, paid again): genbatch retry ${manifestArg} (--code CODE or --id ID to choose; genbatch status ${manifestArg} lists them), then run it again`,
    );
  if (c.blocked)
    lines.push(
      `${count(c.blocked, 'blocked item')} (moderation) ${c.blocked === 1 ? 'is' : 'are'} never resent unchanged: change the prompt to submit again`,
    );
  return lines;
}

/** Removes an earlier rehearsal's state; a real run's state given by --state is refused, never touched. */
function startRehearsalOver(statePath: string, defaultPath: boolean): void {
  if (!existsSync(statePath)) return;
  // .genbatch/<name>.simulated.sqlite is only ever a rehearsal's; a path given by --state must say it is one.
  if (!defaultPath && !isRehearsalState(statePath)) {
    throw new ExitError(
      EXIT.usage,
      `${statePath} is the state of a real run; a rehearsal (--simulate) never touches it. Leave out --state, or give a path of its own.`,
    );
  }
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${statePath}${suffix}`, { force: true });
}

function isRehearsalState(statePath: string): boolean {
  const store = openStateReadOnly(statePath);
  try {
    return store.meta('rehearsal') === '1' || store.meta('run_id') === undefined;
  } finally {
    store.close();
  }
}
