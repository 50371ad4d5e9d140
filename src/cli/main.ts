#!/usr/bin/env node
// The bin: the command line runs against this process's streams, environment and signals.
import { EXIT } from './exit.js';
import { main } from './program.js';

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
