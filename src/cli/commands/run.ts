import { openRunWith, type Run, type RunStart } from '../../library/open-run.js';
import type { RunOutcome } from '../../library/run.js';
export { resumeHint } from '../../library/run-end.js';
import type { RunFlags } from '../../options/resolve.js';
import type { LiveView } from '../../library/views.js';
import { endOfRunText } from '../end-of-run.js';
import { count, num, paintFor } from '../format.js';
import { Progress } from '../progress.js';
import { warningReport } from '../../manifest/load-valid.js';

/**
 * `genbatch run`: the library's run with the live line and the texts. The
 * process's signals go to the run once it is open (`takeSignals`); before
 * that, an interrupt exits at once, nothing having been sent.
 */
export async function runCommand(
  path: string,
  flags: RunFlags,
  env: NodeJS.ProcessEnv,
  cwd: string,
  progressOut: NodeJS.WriteStream,
  reportOut: { isTTY?: boolean },
  takeSignals: (interrupt: () => void) => void,
): Promise<{ outcome: RunOutcome; report: string }> {
  const onServiceWait = (reason: string, unreachableMs: number) =>
    progressOut.write(
      `the service is unreachable (${reason}); waiting for it, up to ${unreachableMs < 60_000 ? `${num(unreachableMs / 1000)} s` : `${num(unreachableMs / 60_000)} minutes`} (Ctrl-C stops; nothing was sent)\n`,
    );
  await using run = await openRunWith(path, flags, env, cwd, { onServiceWait });
  const progress = progressFor(progressOut, run.status(), run.start, run.options.clock.timeScale, env);
  const stopListening = run.on(progress.onEvent);
  sayStart(progressOut, run, progress);
  takeSignals(() => run.stop());
  let outcome: RunOutcome;
  try {
    outcome = await run.run();
  } finally {
    // The live line's last word, while the state is still open.
    progress.stop();
    stopListening();
  }
  return { outcome, report: reportOf(outcome, path, cwd, paintFor(reportOut, env)) };
}

/** The end-of-run text and where the results files are. */
function reportOf(outcome: RunOutcome, path: string, cwd: string, paint: ReturnType<typeof paintFor>): string {
  const text = endOfRunText(outcome, outcome.outDir, cwd, outcome.log, path, paint, outcome.rehearsal);
  const { results } = outcome;
  const files = results
    ? `results: ${results.jsonl}, ${results.csv}\ngallery: ${results.html}${results.sidecars !== undefined ? `\nsidecars: ${results.sidecars} next to the outputs` : ''}`
    : outcome.leftToNextRun
      ? "the results, the state's last snapshot and the release of the place are written by the next run: the bucket did not answer within a second of the interrupt"
      : `the results could not be written (${outcome.resultsProblem}); the same command (or genbatch report) writes them from the state once that is fixed`;
  return `${text}\n${files}`;
}

function progressFor(
  out: NodeJS.WriteStream,
  view: LiveView,
  start: RunStart,
  timeScale: number,
  env: NodeJS.ProcessEnv,
): Progress {
  const keys = start.keys.accepted;
  return new Progress(out, view, start.items, {
    publishing: start.publishing,
    keys: keys.map((k) => k.fingerprint),
    // The keys' limits are in the run's real time already.
    pace: {
      limit: keys.reduce((n, k) => n + k.limits.submit.count, 0),
      windowMs: keys[0]!.limits.submit.windowMs,
      timeScale,
    },
    env,
  });
}

/** What the run says before its first submission: warnings, refused keys, the keys, a resume, a rehearsal. */
function sayStart(out: NodeJS.WriteStream, run: Pick<Run, 'start' | 'options'>, progress: Progress): void {
  const { start, options } = run;
  const { keys, manifest, found } = start;
  const { state, outDir } = start.places;
  if (start.warnings.length) out.write(`${warningReport(start.warnings)}\n`);
  if (found.madeBy)
    out.write(
      `the state ${state} is the run of ${found.madeBy}, another manifest file named ${manifest.name}: this run goes on with it (its items, budget and outputs as recorded there). To keep the two apart, give this one another name: (or --state FILE)\n`,
    );
  const { restored } = found;
  if (restored) {
    for (const torn of restored.skipped) out.write(`a snapshot of the state was passed over: ${torn}\n`);
    out.write(
      `no state was here: restored it from ${restored.from} (taken ${new Date(restored.takenAt).toISOString()}) to ${state}; the run goes on from there\n`,
    );
  }
  for (const r of keys.refused)
    out.write(
      `the key ${r.fingerprint} was refused (${r.code}: ${r.message}); the run goes on with the other ${count(keys.accepted.length, 'key')}\n`,
    );
  if (keys.accepted.length > 1)
    out.write(
      `${keys.accepted.length} keys: ${keys.accepted.map((k) => `${k.fingerprint} (${k.limits.submit.count}/${formatWindow(options.clock.serviceMs(k.limits.submit.windowMs))}, cap ${num(k.limits.dailyCap)})`).join(', ')}\n`,
    );
  if (start.resumed)
    out.write(
      `resuming: ${manifest.file} and its files are as the state last saw them; ${count(start.items, 'item')} read from the state, not expanded again\n`,
    );
  if (options.redoRejected) {
    const n = found.redoneRejected.length;
    out.write(
      n
        ? `regenerating ${count(n, 'item')} rejected in review (one new attempt each; the rejected outputs stay on disk as earlier versions)\n`
        : 'no item is rejected in review: nothing to regenerate\n',
    );
  }
  if (options.timeScaleFrom === 'service')
    out.write(
      `time x${options.clock.timeScale}: the service says it is a simulator at that scale, so the key's windows and day are ${options.clock.timeScale} times shorter (--time-scale overrides)\n`,
    );
  if (start.simulated && !options.simulate)
    out.write(
      `the service says it is a simulator: this run's state and outputs are kept apart from a real run's (outputs in ${outDir}, the state ${state}); a real run of this manifest starts afresh\n`,
    );
  if (found.rehearsalStartedOver)
    out.write(
      `an earlier rehearsal's state (--simulate) was started over: its jobs went with its in-process simulator\n`,
    );
  if (options.simulate)
    out.write(
      `rehearsal on the embedded simulator (no key, no credits, time x${options.clock.timeScale}): ${rehearsalCourse(options.redoRejected, found.rehearsalGoesOnWith)}; outputs go to ${outDir}, the state to ${state}\n`,
    );
  progress.start();
}

/** Whether a rehearsal starts over, or goes on with its own state, and why. */
function rehearsalCourse(redoRejected: boolean | undefined, goesOnWith: 'decisions' | undefined): string {
  if (redoRejected) return 'it goes on with its own state to redo its rejects';
  if (goesOnWith) return 'it goes on with its own state to carry out the decisions made on it (else it starts over)';
  return 'it starts over each time';
}

/** A window in the service's own time, as a user gives it (60s, 1m). */
function formatWindow(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 100) / 10}s`;
}
