import { Command } from 'commander';
import type { Writable } from 'node:stream';
// Each command's code is loaded when it runs: `status` need not load the HTTP client, the simulator or the runner.
const manifestCommands = () => import('./commands/manifest-commands.js');
const stateCommands = () => import('./commands/state-commands.js');
const serviceInfo = () => import('./commands/service-info.js');
import { EXIT, ExitError, describeFailure } from '../library/outcome.js';
import { addFlags, withDefaults, type FlagSpec } from '../options/flag.js';
import {
  ESTIMATE_FLAGS,
  ME_FLAGS,
  METRICS_FLAGS,
  MODELS_FLAGS,
  PROGRAM_FLAGS,
  RECONCILE_FLAGS,
  REPORT_FLAGS,
  RETRY_FLAGS,
  APPROVE_FLAGS,
  REJECT_FLAGS,
  REVIEW_FLAGS,
  RUN_FLAGS,
  STATE_FLAGS,
  VALIDATE_FLAGS,
} from '../options/flags.js';
import { SIMULATOR_FLAGS } from '../options/simulator-flags.js';
import { helpFooter } from '../options/help.js';
import { GENBATCH_VERSION } from '../util/version.js';

/** What a command line runs against: the process's own for the bin, streams and an environment of their own in the tests. */
export interface CliIo {
  env: NodeJS.ProcessEnv;
  cwd: string;
  stdout: Writable & { isTTY?: boolean };
  /** Progress and messages; the live line redraws only on a terminal. */
  stderr: NodeJS.WriteStream;
  /** Ctrl-C and SIGTERM during a run: the first calls `interrupt`; returns what stops listening. */
  onSignals?: (interrupt: () => void, resumeHint: () => string) => () => void;
  /** `simulate` serves until this resolves. */
  untilStopped: () => Promise<void>;
}

const HELP_AFTER = `
Examples:
  genbatch validate catalog.yaml --online
  genbatch estimate catalog.yaml
  genbatch run catalog.yaml --simulate      a rehearsal on the embedded simulator (no key, no credits): outputs go to <out dir>.rehearsal
  genbatch run catalog.yaml                 run, or resume after a stop or a crash: nothing is paid twice
  genbatch status catalog.yaml
  genbatch retry --code GENERATION_FAILED catalog.yaml
${helpFooter()}`;

/**
 * Parses `argv` (as process.argv: node, script, arguments), runs the command
 * and resolves to its exit code; nothing here exits the process.
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const env = { ...io.env };
  // --no-color anywhere on the line means NO_COLOR (no-color.org), so every stream and command honours it alike.
  if (argv.includes('--no-color')) env.NO_COLOR = '1';
  // The key is read from the environment only: a flag would leave it in shell history and the process list.
  if (argv.some((a) => a === '--api-key' || a.startsWith('--api-key='))) {
    io.stderr.write(
      'genbatch: the API key is never taken as a flag (it would show in the shell history and the process list): set GENBATCH_API_KEY in the environment instead.\n',
    );
    return EXIT.usage;
  }
  let exitCode: number = EXIT.ok;
  const print = (text: string): void => {
    io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  };

  const program = addFlags(
    new Command()
      .name('genbatch')
      .description('Batch runner for the image and video generation API.')
      .version(GENBATCH_VERSION, '-V, --version', 'print the version'),
    PROGRAM_FLAGS,
  )
    .addHelpText('after', HELP_AFTER)
    .showHelpAfterError('(add --help for usage)')
    // Before any command is added: each takes these from the program when it is made.
    .configureOutput({ writeOut: (text) => io.stdout.write(text), writeErr: (text) => io.stderr.write(text) })
    .exitOverride();

  const ctx: CommandContext = { io, env, print, exit: (code) => (exitCode = code) };
  addManifestCommands(program, ctx);
  addRun(program, ctx);
  addStateCommands(program, ctx);
  addServiceCommands(program, ctx);
  addReview(program, ctx);
  addMetrics(program, ctx);
  addSimulate(program, ctx);

  try {
    await program.parseAsync([...argv]);
    return exitCode;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (typeof code === 'string' && code.startsWith('commander.')) {
      const commanderExit = (error as { exitCode?: number }).exitCode ?? EXIT.usage;
      return code === 'commander.helpDisplayed' || code === 'commander.version'
        ? EXIT.ok
        : commanderExit === 0
          ? 0
          : EXIT.usage;
    }
    const failure = describeFailure(error);
    if (error instanceof ExitError && error.stdout !== undefined) io.stdout.write(`${error.stdout}\n`);
    io.stderr.write(`${prefixed(failure.message)}\n`);
    return failure.exitCode;
  }
}

/** Each line of an error says whose it is; an indented line goes on the one above. */
function prefixed(message: string): string {
  return message
    .split('\n')
    .map((line) => (line === '' || /^\s/.test(line) ? line : `genbatch: ${line}`))
    .join('\n');
}

/** What a command's action needs of the command line: its io and environment, a way to print, its exit code. */
interface CommandContext {
  io: CliIo;
  env: NodeJS.ProcessEnv;
  print(text: string): void;
  exit(code: number): void;
}

/** A command of `manifest`, its description and its flags (all declared in src/options/), its help's footer. */
function command(program: Command, name: string, description: string, flags: Record<string, FlagSpec>): Command {
  return withFooter(addFlags(program.command(name).argument('<manifest>').description(description), flags));
}

/**
 * A state command's flags with the environment's service: without --state or --simulate, a trial's state is the
 * one meant when GENBATCH_BASE_URL is the simulator it ran against.
 */
function inEnv<T extends object>(options: T, ctx: CommandContext): T & { baseUrl: string | undefined } {
  return { ...options, baseUrl: ctx.env.GENBATCH_BASE_URL };
}

/** Every command's --help ends with the environment it reads and what its exit code means. */
const withFooter = (cmd: Command): Command => cmd.addHelpText('after', helpFooter());

function addManifestCommands(program: Command, ctx: CommandContext): void {
  command(program, 'validate', 'check a manifest; --online also checks it against the service', VALIDATE_FLAGS).action(
    async (manifest: string, options) =>
      ctx.print(await (await manifestCommands()).validateCommand(manifest, options, ctx.env, ctx.io.cwd)),
  );

  command(
    program,
    'estimate',
    'dry run: credits per model and in total, key days, budget and time; submits nothing',
    ESTIMATE_FLAGS,
  ).action(async (manifest: string, options) => {
    // Exit 3 when the balance, the budget or the daily cap make the run impossible as planned; the figures print all the same.
    const estimate = await (await manifestCommands()).estimateCommand(manifest, options, ctx.env, ctx.io.cwd);
    ctx.print(estimate.text);
    ctx.exit(estimate.exitCode);
  });
}

function addRun(program: Command, ctx: CommandContext): void {
  command(program, 'run', 'run, or resume, a manifest', RUN_FLAGS).action(async (manifest: string, options) => {
    const { runCommand, resumeHint } = await import('./commands/run.js');
    let stopSignals: (() => void) | undefined;
    const { outcome, report } = await runCommand(
      manifest,
      options,
      ctx.env,
      ctx.io.cwd,
      ctx.io.stderr,
      ctx.io.stdout,
      (interrupt) => {
        stopSignals = ctx.io.onSignals?.(interrupt, () => resumeHint(Boolean(options.simulate)));
      },
    ).finally(() => stopSignals?.());
    ctx.print(options.json ? JSON.stringify(outcome, null, 2) : report);
    ctx.exit(outcome.exitCode);
  });
}

function addStateCommands(program: Command, ctx: CommandContext): void {
  command(program, 'status', 'progress, credits and failures, from the state file alone', STATE_FLAGS).action(
    async (manifest: string, options) =>
      ctx.print(
        await (await stateCommands()).statusCommand(manifest, inEnv(options, ctx), ctx.io.cwd, ctx.io.stdout, ctx.env),
      ),
  );

  for (const [name, description] of [
    [
      'pause',
      'the running run of this state sends nothing new (jobs in flight are still polled and downloaded); with no run, recorded: a run started on it starts paused',
    ],
    ['resume', 'a paused run (or state) goes on'],
    ['drain', 'the running run sends nothing new, finishes and downloads what is in flight, and exits 3'],
  ] as const) {
    command(program, name, description, STATE_FLAGS).action(async (manifest: string, options) => {
      const { steeringCommand } = await import('./commands/steering-commands.js');
      ctx.print(await steeringCommand(name, manifest, inEnv(options, ctx), ctx.io.cwd));
    });
  }
  command(
    program,
    'report',
    'write results.jsonl and results.csv (one row per item), and with --html the index.html gallery, into the output dir, from the state file alone',
    REPORT_FLAGS,
  ).action(async (manifest: string, options) =>
    ctx.print(await (await stateCommands()).reportCommand(manifest, inEnv(options, ctx), ctx.io.cwd, ctx.env)),
  );

  for (const [name, decision, flags, description] of [
    [
      'approve',
      'approved',
      APPROVE_FLAGS,
      "record approval of each item's current version (ID@N: version N, refused if made again since), as review does: the items it gates are sent (--waiting: every gate an item waits on)",
    ],
    [
      'reject',
      'rejected',
      REJECT_FLAGS,
      "record rejection of each item's current version (ID@N: version N, refused if made again since), as review does: the items it gates are skipped, unpaid",
    ],
  ] as const) {
    command(program, name, description, flags)
      .argument('[ids...]')
      .action(async (manifest: string, ids: string[], options) => {
        const { decideCommand } = await import('./commands/decisions.js');
        ctx.print(await decideCommand(manifest, ids, decision, inEnv(options, ctx), ctx.io.cwd, ctx.env));
      });
  }

  command(
    program,
    'decisions',
    'the decision record, newest first: who decided what, when, and what it unlocked, skipped or took back',
    STATE_FLAGS,
  ).action(async (manifest: string, options) => {
    const { recordCommand } = await import('./commands/decisions.js');
    ctx.print(await recordCommand(manifest, inEnv(options, ctx), ctx.io.cwd));
  });

  command(program, 'retry', 'put failed items back with new attempts', RETRY_FLAGS).action(
    async (manifest: string, options) =>
      ctx.print(await (await stateCommands()).retryCommand(manifest, inEnv(options, ctx), ctx.io.cwd)),
  );
}

function addServiceCommands(program: Command, ctx: CommandContext): void {
  command(
    program,
    'reconcile',
    "compare the state with the service's job list for every key: paid jobs the state does not know, accepted jobs the service lost, credits on both sides; sends nothing, changes nothing",
    RECONCILE_FLAGS,
  ).action(async (manifest: string, options) => {
    const { reconcileCommand } = await import('./commands/reconcile.js');
    const reconciled = await reconcileCommand(manifest, options, ctx.env, ctx.io.cwd);
    ctx.print(reconciled.text);
    ctx.exit(reconciled.exitCode);
  });
  withFooter(addFlags(program.command('models').description('list the models the key may use'), MODELS_FLAGS)).action(
    async (options) => ctx.print(await (await serviceInfo()).modelsCommand(options, ctx.env)),
  );

  withFooter(
    addFlags(program.command('me').description('show credits, scopes and limits of the key'), ME_FLAGS),
  ).action(async (options) => ctx.print(await (await serviceInfo()).meCommand(options, ctx.env)));
}

function addReview(program: Command, ctx: CommandContext): void {
  command(
    program,
    'review',
    'a local web app to watch a run live and approve or reject every output with the keyboard (loopback, a token in its URL); works beside a running run',
    REVIEW_FLAGS,
  ).action(async (manifest: string, options) => {
    const { reviewCommand } = await import('./commands/review.js');
    await serveUntilStopped(ctx, options.json, await reviewCommand(manifest, inEnv(options, ctx), ctx.io.cwd, ctx.env));
  });
}

/** A local server's address printed (as JSON with --json, its banner then on stderr), served until Ctrl-C. */
async function serveUntilStopped(
  ctx: CommandContext,
  json: boolean | undefined,
  started: { server: { close(): Promise<void> }; banner: string; serving: object },
): Promise<void> {
  if (json) {
    ctx.print(JSON.stringify(started.serving, null, 2));
    ctx.io.stderr.write(`${started.banner}\n`);
  } else ctx.print(started.banner);
  await ctx.io.untilStopped();
  await started.server.close();
}

function addMetrics(program: Command, ctx: CommandContext): void {
  command(
    program,
    'metrics',
    "serve the state's figures at /metrics for Prometheus (loopback, a token on every scrape), read from the state at each scrape",
    METRICS_FLAGS,
  ).action(async (manifest: string, options) => {
    const { metricsCommand } = await import('./commands/metrics.js');
    await serveUntilStopped(ctx, options.json, await metricsCommand(manifest, inEnv(options, ctx), ctx.io.cwd));
  });
}

function addSimulate(program: Command, ctx: CommandContext): void {
  const simulate = program.command('simulate').description('start the embedded service simulator on loopback');
  withFooter(addFlags(simulate, SIMULATOR_FLAGS)).action(async (options) => {
    const { simulateCommand } = await import('./commands/simulate.js');
    const { simulator, banner } = await simulateCommand(withDefaults(options, SIMULATOR_FLAGS), ctx.env);
    ctx.print(banner);
    await ctx.io.untilStopped();
    await simulator.close();
  });
}
