#!/usr/bin/env node
// The bin: the command line runs against this process's streams, environment and signals.
import { setFlagsFromString } from 'node:v8';
import { EXIT } from './exit.js';
import { main } from './program.js';

// V8 may decide, from objects that lived long (a catalog's 100,000 validated items), to allocate
// later objects of the same code straight into the old generation: the report's short-lived pages
// then piled up there until a full collection, and a first start's peak RSS was 206 MB or 257-300 MB
// from one run to the next. Without that pretenuring it stays at 204-210 MB; validation is as fast.
setFlagsFromString('--no-allocation-site-pretenuring');

process.exitCode = await main(process.argv, {
  env: process.env,
  cwd: process.cwd(),
  stdout: process.stdout,
  stderr: process.stderr,
  onSignals: (interrupt, resumeHint) => {
    let signals = 0;
    const onSignal = () => {
      if (++signals > 1) {
        process.stderr.write(`\nexiting now. ${resumeHint()}\n`);
        process.exit(EXIT.interrupted);
      }
      process.stderr.write('\nstopping: nothing new is sent; requests already on the wire record their answer, then the report is written. Press Ctrl-C again to exit now.\n');
      interrupt();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    return () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    };
  },
  untilStopped: () =>
    new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    }),
});
