import type { Logger } from '../log/logger.js';
import { Notifier } from '../notify/notifier.js';
import type { ResolvedRunOptions } from '../options/resolve.js';
import { runIdFor, type PreparedRun, type RunSummary } from '../runner/index.js';
import { runExitCode } from './outcome.js';

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

/** What to tell whoever stops a run: how to go on from there. */
export function resumeHint(rehearsal: boolean): string {
  return rehearsal
    ? 'A rehearsal starts over each time: nothing of it is resumed.'
    : 'The state is saved: run the same command to resume; nothing is paid twice.';
}

/** The run ended: its results files, and the outcome with its exit code (`interrupted`: an interrupt that landed after the summary, asked once the end is written). */
export async function outcomeOf(
  ended: RunSummary,
  prepared: PreparedRun,
  logger: Logger,
  interrupted: () => RunSummary['stop'],
): Promise<RunOutcome> {
  const { options } = prepared;
  const { results, problem } = await writeResults(prepared, logger);
  // An interrupt that landed meanwhile is why the run stopped.
  const stop = interrupted() ?? ended.stop;
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
  logger: Logger,
): Promise<{ results: RunOutcome['results']; problem?: string }> {
  try {
    const { writeReport } = await import('../report/index.js'); // needed at the end only: not loaded before the first submission
    const written = await writeReport(prepared.store, prepared.outputs, {
      title: prepared.manifest.name,
      html: true,
      sidecars: prepared.options.sidecars,
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
export function notifierFor(options: ResolvedRunOptions, prepared: PreparedRun, logger: Logger): Notifier | undefined {
  if (!options.notify) return undefined;
  const { store } = prepared;
  return new Notifier({
    ...options.notify,
    run: store.meta('run_id') ?? runIdFor(prepared.manifest, prepared.outDir),
    manifest: prepared.manifest.source.absPath,
    stallMs: options.stallMs,
    snapshot: () => ({ counts: store.itemReports.counts(), credits: store.attempts.totals() }),
    logger,
  });
}
