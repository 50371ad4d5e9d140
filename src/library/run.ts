import { parseProgramFlags } from '../options/resolve.js';
import type { ProgramRunFlags } from '../options/resolve.js';
import { environmentFor, type Credentials } from './environment.js';
import { EventChannel, type GenbatchEvent } from './events.js';
import { openRunWith, type Run } from './open-run.js';
import { asRunError } from './outcome.js';
import type { RunOutcome } from './run-end.js';

export type { Run, RunStart } from './open-run.js';
export type { RunOutcome } from './run-end.js';

/** What `run()` and `openRun()` take: the CLI's run flags in camelCase, the credentials, and a signal that stops the run. */
export type RunOptions = ProgramRunFlags &
  Credentials & {
    /** Aborting it is Ctrl-C: nothing new is sent, what is on the wire records its answer, exit code 130. */
    signal?: AbortSignal;
    /** Where a relative manifest, state or out dir is read from (default: the process's working directory). */
    cwd?: string;
    /** Events kept for a reader that falls behind (default 10,000); older ones are dropped and counted. */
    eventBuffer?: number;
  };

/** A run under way: its events as they happen, and its outcome once it ends. */
export interface RunHandle {
  events: AsyncIterable<GenbatchEvent>;
  /** Resolves when the run has ended and closed all it held; rejects (an error with `exitCode`) when it cannot start. */
  done: Promise<RunOutcome>;
}

/**
 * Opens a run, or a resume, as `genbatch run` does, without printing,
 * exiting or taking signals; nothing is sent until its `run()`. Rejects (an
 * error with `exitCode`) when it cannot start. `await using run = await openRun(...)`
 * closes what it opened, in the reverse order.
 */
export function openRun(manifest: string, options: RunOptions = {}): Promise<Run> {
  return opening(manifest, options);
}

/** `openRun`, saying each wait for a service that answers nothing yet: the options' flags parsed here, once. */
async function opening(
  manifest: string,
  options: RunOptions,
  onServiceWait?: (reason: string, unreachableMs: number) => void,
): Promise<Run> {
  const { signal, cwd, eventBuffer: _, apiKey, baseUrl, env, ...program } = options;
  try {
    const flags = { ...parseProgramFlags(program), ...(baseUrl ? { baseUrl } : {}) };
    const watch = { signal, ...(onServiceWait ? { onServiceWait } : {}) };
    return await openRunWith(manifest, flags, environmentFor({ apiKey, env }), cwd ?? process.cwd(), watch);
  } catch (error) {
    throw asRunError(error);
  }
}

/**
 * Runs a manifest, or resumes it, start to end: `openRun`, its `run()`,
 * and what it opened closed. Its events begin with the wait for the service,
 * if any. The process ends by itself once `done` settles.
 */
export function run(manifest: string, options: RunOptions = {}): RunHandle {
  const channel = new EventChannel<GenbatchEvent>(options.eventBuffer ?? 10_000);
  const done = (async () => {
    await using opened = await opening(manifest, options, (reason, unreachableMs) =>
      channel.push({ kind: 'service-unreachable', reason, unreachableMs }),
    );
    const stopListening = opened.on((event) => channel.push(event));
    try {
      return await opened.run();
    } finally {
      stopListening();
    }
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
