import { Command } from 'commander';
import type { Writable } from 'node:stream';
// Each command's code is loaded when it runs: `status` need not load the HTTP client, the simulator or the runner.
const manifestCommands = () => import('./commands/manifest-commands.js');
const stateCommands = () => import('./commands/state-commands.js');
const serviceInfo = () => import('./commands/service-info.js');
import { EXIT, ExitError, describeFailure } from '../library/outcome.js';
import { addFlags, ESTIMATE_FLAGS, RUN_FLAGS, SERVER_FLAGS, withDefaults } from '../options/flags.js';
import { GENBATCH_VERSION } from '../util/version.js';
import {
  accountState,
  jobVisibility,
  keyCount,
  keyDailyCap,
  revokeAfter,
  scopes,
  mediaType,
  nonNegativeNumber,
  outage,
  positiveInt,
  positiveNumber,
  probability,
  range,
} from '../options/parse.js';

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

function withConnection(cmd: Command): Command {
  return cmd
    .option('--base-url <url>', 'the service base URL, ending in /v1 (default GENBATCH_BASE_URL)')
    .option('--simulate', 'use an in-process simulator instead of the service (no key, no credits)');
}

const HELP_AFTER = `
Environment:
  GENBATCH_API_KEY    the API key (never a flag, never logged or stored)
  GENBATCH_BASE_URL   the service's base URL, ending in /v1 (or --base-url)
  --simulate          on any command that talks to the service: an in-process simulator, no key, no credits

Examples:
  genbatch validate catalog.yaml --online
  genbatch estimate catalog.yaml
  genbatch run catalog.yaml --simulate      a rehearsal: outputs go to <out dir>.simulated
  genbatch run catalog.yaml                 run, or resume after a stop or a crash: nothing is paid twice
  genbatch status catalog.yaml
  genbatch retry catalog.yaml --code GENERATION_FAILED

Exit codes:
  0 every item done   1 some items failed   2 usage or invalid manifest   3 stopped early (budget, credits, key)
  4 the environment (service unreachable, state held, output dir, disk)   130 interrupted`;

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

  const program = new Command()
    .name('genbatch')
    .description('Batch runner for the image and video generation API.')
    .version(GENBATCH_VERSION, '-V, --version', 'print the version')
    .option('--no-color', 'no colour (also NO_COLOR=1); colour is only ever used on a terminal')
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
    io.stderr.write(`genbatch: ${failure.message}\n`);
    return failure.exitCode;
  }
}

/** What a command's action needs of the command line: its io and environment, a way to print, its exit code. */
interface CommandContext {
  io: CliIo;
  env: NodeJS.ProcessEnv;
  print(text: string): void;
  exit(code: number): void;
}

function addManifestCommands(program: Command, ctx: CommandContext): void {
  withConnection(
    program
      .command('validate')
      .argument('<manifest>')
      .description('check a manifest; --online also checks it against the service'),
  )
    .option('--online', 'also check models, kinds, modes, allowed values and key scopes against the service')
    .option('--json', 'print the result (or every issue) as JSON')
    .action(async (manifest: string, opts) =>
      ctx.print(await (await manifestCommands()).validateCommand(manifest, opts, ctx.env, ctx.io.cwd)),
    );

  addFlags(
    withConnection(
      program
        .command('estimate')
        .argument('<manifest>')
        .description('dry run: credits per model and in total, key days, budget and time; submits nothing'),
    ),
    ESTIMATE_FLAGS,
  ).action(async (manifest: string, opts) => {
    // Exit 3 when the balance, the budget or the daily cap make the run impossible as planned; the figures print all the same.
    const estimate = await (await manifestCommands()).estimateCommand(manifest, opts, ctx.env, ctx.io.cwd);
    ctx.print(estimate.text);
    ctx.exit(estimate.exitCode);
  });
}

function addRun(program: Command, ctx: CommandContext): void {
  addFlags(
    withConnection(program.command('run').argument('<manifest>').description('run, or resume, a manifest')),
    RUN_FLAGS,
  ).action(async (manifest: string, opts) => {
    const { runCommand, resumeHint } = await import('./commands/run.js');
    let stopSignals: (() => void) | undefined;
    const { outcome, report } = await runCommand(
      manifest,
      opts,
      ctx.env,
      ctx.io.cwd,
      ctx.io.stderr,
      ctx.io.stdout,
      (interrupt) => {
        stopSignals = ctx.io.onSignals?.(interrupt, () => resumeHint(Boolean(opts.simulate)));
      },
    ).finally(() => stopSignals?.());
    ctx.print(opts.json ? JSON.stringify(outcome, null, 2) : report);
    ctx.exit(outcome.exitCode);
  });
}

function addStateCommands(program: Command, ctx: CommandContext): void {
  program
    .command('status')
    .argument('<manifest>')
    .description('progress, credits and failures, from the state file alone')
    .option('--state <path>', 'the SQLite state file')
    .option('--simulate', "the rehearsal's state (run --simulate), not the real run's")
    .option('--json', 'print as JSON')
    .action(async (manifest: string, opts) =>
      ctx.print(await (await stateCommands()).statusCommand(manifest, opts, ctx.io.cwd, ctx.io.stdout, ctx.env)),
    );

  for (const [command, description] of [
    [
      'pause',
      'the running run of this state sends nothing new (jobs in flight are still polled and downloaded); with no run, recorded: a run started on it starts paused',
    ],
    ['resume', 'a paused run (or state) goes on'],
    ['drain', 'the running run sends nothing new, finishes and downloads what is in flight, and exits 3'],
  ] as const) {
    program
      .command(command)
      .argument('<manifest>')
      .description(description)
      .option('--state <path>', 'the SQLite state file')
      .option('--simulate', "the rehearsal's state (run --simulate), not the real run's")
      .option('--json', 'print as JSON')
      .action(async (manifest: string, opts) => {
        const { steeringCommand } = await import('./commands/steering-commands.js');
        ctx.print(await steeringCommand(command, manifest, opts, ctx.io.cwd));
      });
  }
  program
    .command('report')
    .argument('<manifest>')
    .description(
      'write results.jsonl and results.csv (one row per item), and with --html the index.html gallery, into the output dir, from the state file alone',
    )
    .option('--state <path>', 'the SQLite state file')
    .option('--simulate', "the rehearsal's state (run --simulate), not the real run's")
    .option('--out <dir>', 'the output dir the run wrote to (default: the one it recorded)')
    .option('--html', 'also write index.html, a gallery of the outputs that opens from the file system')
    .option('--sidecars', 'also write a metadata file (<output>.json) next to each output')
    .option('--json', 'print the files written as JSON')
    .action(async (manifest: string, opts) =>
      ctx.print(await (await stateCommands()).reportCommand(manifest, opts, ctx.io.cwd, ctx.env)),
    );

  program
    .command('retry')
    .argument('<manifest>')
    .description('put failed items back with new attempts')
    .option('--state <path>', 'the SQLite state file')
    .option('--simulate', "the rehearsal's state (run --simulate), not the real run's")
    .option('--code <code...>', 'only items that failed with these codes')
    .option('--id <id...>', 'only these items (also puts back an item stopped on a key conflict: it is paid again)')
    .option('--rejected', 'put back the done items whose current output was rejected in genbatch review')
    .option('--json', 'print what was put back as JSON')
    .action(async (manifest: string, opts) =>
      ctx.print(await (await stateCommands()).retryCommand(manifest, opts, ctx.io.cwd)),
    );
}

function addServiceCommands(program: Command, ctx: CommandContext): void {
  withConnection(
    program
      .command('reconcile')
      .argument('<manifest>')
      .description(
        "compare the state with the service's job list for every key: paid jobs the state does not know, accepted jobs the service lost, credits on both sides; sends nothing, changes nothing",
      ),
  )
    .option('--state <path>', 'the SQLite state file')
    .option('--json', 'print as JSON')
    .action(async (manifest: string, opts) => {
      const { reconcileCommand } = await import('./commands/reconcile.js');
      const reconciled = await reconcileCommand(manifest, opts, ctx.env, ctx.io.cwd);
      ctx.print(reconciled.text);
      ctx.exit(reconciled.exitCode);
    });
  withConnection(program.command('models').description('list the models the key may use'))
    .option('--type <type>', 'image or video', mediaType)
    .option('--json', 'print the catalog entries as JSON')
    .action(async (opts) => ctx.print(await (await serviceInfo()).modelsCommand(opts, ctx.env)));

  withConnection(program.command('me').description('show credits, scopes and limits of the key'))
    .option('--json', 'print the response as JSON')
    .action(async (opts) => ctx.print(await (await serviceInfo()).meCommand(opts, ctx.env)));
}

function addReview(program: Command, ctx: CommandContext): void {
  const review = program
    .command('review')
    .argument('<manifest>')
    .description(
      'a local web app to watch a run live and approve or reject every output with the keyboard (loopback, a token in its URL); works beside a running run',
    )
    .option('--state <path>', 'the SQLite state file')
    .option('--simulate', "the rehearsal's state (run --simulate), not the real run's")
    .option('--json', 'print where it serves as JSON (url, port, state, outDir); the keys help goes to stderr');
  addFlags(review, SERVER_FLAGS).action(async (manifest: string, opts) => {
    const { reviewCommand } = await import('./commands/review.js');
    await serveUntilStopped(ctx, opts.json, await reviewCommand(manifest, opts, ctx.io.cwd, ctx.env));
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
  const metrics = program
    .command('metrics')
    .argument('<manifest>')
    .description(
      "serve the state's figures at /metrics for Prometheus (loopback, a token on every scrape), read from the state at each scrape",
    )
    .option('--state <path>', 'the SQLite state file')
    .option('--simulate', "the rehearsal's state (run --simulate), not the real run's")
    .option(
      '--token-file <path>',
      'the token scrapes must carry, from the first line of a file (default: a random one)',
    )
    .option('--json', 'print where it serves as JSON (url, port, state)');
  addFlags(metrics, SERVER_FLAGS).action(async (manifest: string, opts) => {
    const { metricsCommand } = await import('./commands/metrics.js');
    await serveUntilStopped(ctx, opts.json, await metricsCommand(manifest, opts, ctx.io.cwd));
  });
}

function addSimulate(program: Command, ctx: CommandContext): void {
  const simulate = program.command('simulate').description('start the embedded service simulator on loopback');
  simulatorFaults(simulatorChoices(addFlags(simulate, SERVER_FLAGS))).action(async (opts) => {
    const { simulateCommand } = await import('./commands/simulate.js');
    const { simulator, banner } = await simulateCommand(withDefaults(opts, SERVER_FLAGS));
    ctx.print(banner);
    await ctx.io.untilStopped();
    await simulator.close();
  });
}

/** The simulator's setup: where it listens, its time, its account and keys, and its choices where the spec is silent. */
function simulatorChoices(cmd: Command): Command {
  return cmd
    .option('--time-scale <x>', 'divide every service duration by this', positiveNumber)
    .option('--seed <n>', 'seed for the simulated randomness', nonNegativeNumber)
    .option('--credits <n>', 'starting balance', nonNegativeNumber)
    .option('--daily-cap <credits>', "each key's daily credit cap (at most 20,000, the spec's default)", keyDailyCap)
    .option(
      '--keys <n>',
      'keys of the one simulated account (1 to 5): one balance, each key its own limits and daily cap',
      keyCount,
    )
    .option(
      '--scopes <list>',
      "a key's scopes: image, video or image,video; repeat for each key in order (one alone is every key's)",
      scopes,
    )
    .option(
      '--revoke-after <requests[:key]>',
      'the operator revokes a key (the first by default) after that many requests: 401 from then on; repeatable',
      revokeAfter,
    )
    .option(
      '--account-state <state>',
      "the account's standing: ok, not-eligible, api-disabled or suspended (every request is refused with the spec's 403 code)",
      accountState,
    )
    .option(
      '--job-visibility <reading>',
      "which jobs a key lists and reads, where the spec is silent: account (every job of the account, the default) or key (its own and the web application's)",
      jobVisibility,
    )
    .option('--max-prompt-length <n>', 'longest prompt accepted (a simulator choice; default 4000)', positiveInt)
    .option('--max-image-upload-mb <n>', 'largest image upload (a simulator choice; default 20)', positiveNumber)
    .option('--max-video-upload-mb <n>', 'largest video upload (a simulator choice; default 200)', positiveNumber);
}

/** The faults the simulator injects, at random or at a given charge. */
function simulatorFaults(cmd: Command): Command {
  return cmd
    .option('--failure-rate <p>', 'share of jobs that end FAILED', probability)
    .option('--expiry-rate <p>', 'share of jobs that end EXPIRED', probability)
    .option('--moderation-rate <p>', 'share of submissions blocked by moderation', probability)
    .option('--unavailable-rate <p>', 'share of submissions answered 503', probability)
    .option('--drop-rate <p>', 'share of created jobs whose response is dropped', probability)
    .option('--latency <ms>', 'added latency per request, N or MIN-MAX milliseconds', range)
    .option('--image-seconds <s>', 'image job run time, N or MIN-MAX service seconds', range)
    .option('--video-seconds <s>', 'video job run time, N or MIN-MAX service seconds', range)
    .option('--link-ttl <s>', 'output link lifetime in service seconds', positiveNumber)
    .option('--upload-ttl <s>', 'uploaded material lifetime in service seconds', positiveNumber)
    .option(
      '--outage <charge:seconds[:mode]>',
      'go off the network at that charge (its answer is lost) for that many real seconds: refuse (default), reset, hang, or blackhole (requests read and never answered, even after it ends); repeatable',
      outage,
    );
}
