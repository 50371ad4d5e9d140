#!/usr/bin/env node
// The bin: the command line runs against this process's streams, environment and signals.
import module from 'node:module';
import { setFlagsFromString } from 'node:v8';

// Signals are handled from the first instant, before the command's code is even loaded: until a command
// takes them (a run, to stop cleanly; simulate, to close), an interrupt exits 130 at once. Nothing has
// been sent then, and every state write is a transaction.
const INTERRUPTED = 130;
/**
 * However the end goes after an interrupt (a bucket or a disk that answers
 * nothing), the process exits within this: every step is committed before it
 * is acted on, so the state is whole at any instant, and what the end had not
 * written yet (results, the gallery, copies for a bucket) the same command
 * writes. A scheduler's grace period before SIGKILL is often short.
 */
const END_WITHIN_MS = 1_800;
let taker: (() => void) | undefined;
const onSignal = () => {
  if (taker) return taker();
  process.stderr.write('\ninterrupted: nothing was sent.\n');
  process.exit(INTERRUPTED);
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
// A reader that stopped reading (`genbatch … --help | head`, a live line piped into a closed pager) closes the pipe:
// what is still said there is dropped, and the command goes on to its own end and exit code, with no stack trace.
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') throw error;
  });
/** Gives the process's signals to `handler` until the returned function is called. */
const takeSignals = (handler: () => void) => {
  taker = handler;
  return () => {
    if (taker === handler) taker = undefined;
  };
};

// V8 may decide, from objects that lived long (a catalog's 100,000 validated items), to allocate
// later objects of the same code straight into the old generation: the report's short-lived pages
// then piled up there until a full collection, and a first start's peak RSS was 206 MB or 257-300 MB
// from one run to the next. Without that pretenuring it stays at 204-210 MB; validation is as fast.
setFlagsFromString('--no-allocation-site-pretenuring');

// From Node 22.1 on, what V8 compiled of the command's code is kept on disk (in os.tmpdir(), or NODE_COMPILE_CACHE)
// and read back by the next start: every command compiled some 90 ms of code before it did anything. Node 20 has no
// such cache, and where the folder cannot be written the cache is quietly off.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

// NO_COLOR wins (no-color.org). With FORCE_COLOR set too, Node 23 and later warn on stderr the first time anything
// asks whether to colour (node:assert, which the HTTP client loads, does): the user said no colour, and hears no warning.
if (process.env.NO_COLOR && process.env.FORCE_COLOR !== undefined) delete process.env.FORCE_COLOR;

const { main } = await import('./program.js');

process.exitCode = await main(process.argv, {
  env: process.env,
  cwd: process.cwd(),
  stdout: process.stdout,
  stderr: process.stderr,
  onSignals: (interrupt, resumeHint) => {
    let signals = 0;
    return takeSignals(() => {
      if (++signals > 1) {
        process.stderr.write(`\nexiting now. ${resumeHint()}\n`);
        process.exit(INTERRUPTED);
      }
      process.stderr.write(
        '\nstopping: nothing new is sent; requests already on the wire record their answer, then the report is written. Press Ctrl-C again to exit now.\n',
      );
      interrupt();
      setTimeout(() => {
        process.stderr.write(
          `\nexiting now: the end was not done within ${END_WITHIN_MS / 1000} s (something it writes to does not answer); the results and whatever waits to be written are written by the next run. ${resumeHint()}\n`,
        );
        process.exit(INTERRUPTED);
      }, END_WITHIN_MS).unref();
    });
  },
  untilStopped: () => new Promise<void>((resolve) => takeSignals(resolve)),
});
