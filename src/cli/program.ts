import { Command } from 'commander';
import type { Writable } from 'node:stream';
// Each command's code is loaded when it runs: `status` need not load the HTTP client, the simulator or the runner.
const manifestCommands = () => import('./commands/manifest-commands.js');
const stateCommands = () => import('./commands/state-commands.js');
const serviceInfo = () => import('./commands/service-info.js');
import { EXIT, ExitError, describeFailure, exitCodeOf } from './exit.js';
import { GENBATCH_VERSION } from '../util/version.js';
import {
  accountState,
  canarySize,
  jobVisibility,
  keyCount,
  keyDailyCap,
  revokeAfter,
  scopes,
  maxBlocked,
  mediaType,
  nonNegativeInt,
  nonNegativeNumber,
  outage,
  pollWait,
  port,
  positiveInt,
  positiveNumber,
  probability,
  range,
  rate,
} from './parse.js';

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

  withConnection(
    program
      .command('estimate')
      .argument('<manifest>')
      .description('dry run: credits per model and in total, key days, budget and time; submits nothing'),
  )
    .option('--json', 'print the figures as JSON')
    .option(
      '--state <path>',
      "a run's state file: the estimate then also says what remains to spend (default: the manifest's own, when it has run)",
    )
    .option('--submit-rate <N/W>', 'submissions per window, e.g. 10/60s', rate)
    .option('--max-images-in-flight <n>', 'image jobs in flight', positiveInt)
    .option('--max-videos-in-flight <n>', 'video jobs in flight', positiveInt)
    .option('--daily-cap <credits>', "the key's daily cap (default: what /me says, else 20000)", positiveInt)
    .option('--max-credits <credits>', 'budget for the run (default: budget.maxCredits)', positiveInt)
    .option(
      '--redo-rejected',
      'also count the items rejected in genbatch review, as run --redo-rejected makes them again',
    )
    .action(async (manifest: string, opts) => {
      // Exit 3 when the balance, the budget or the daily cap make the run impossible as planned; the figures print all the same.
      const estimate = await (await manifestCommands()).estimateCommand(manifest, opts, ctx.env, ctx.io.cwd);
      ctx.print(estimate.text);
      ctx.exit(estimate.exitCode);
    });
}

function addRun(program: Command, ctx: CommandContext): void {
  runOptions(
    withConnection(program.command('run').argument('<manifest>').description('run, or resume, a manifest')),
  ).action(async (manifest: string, opts) => {
    const { runCommand } = await import('./commands/run.js');
    const handle = await runCommand(manifest, opts, ctx.env, ctx.io.cwd, ctx.io.stderr, ctx.io.stdout);
    const stopSignals = ctx.io.onSignals?.(
      () => handle.interrupt(),
      () => handle.resumeHint,
    );
    const { summary, report, json } = await handle.done.finally(() => stopSignals?.());
    ctx.print(opts.json ? JSON.stringify(json, null, 2) : report);
    ctx.exit(exitCodeOf(summary));
  });
}

function runOptions(cmd: Command): Command {
  return cmd
    .option('--state <path>', 'the SQLite state file (default .genbatch/<name>.sqlite beside the manifest)')
    .option('--out <dir>', "where outputs go (default the manifest's output.dir, else out/<name> beside it)")
    .option('--submit-rate <N/W>', 'submissions per window (default 10/60s)', rate)
    .option('--read-rate <N/W>', 'reads per window (default 120/60s)', rate)
    .option('--upload-rate <N/W>', 'upload grants per window (default 30/60s)', rate)
    .option('--max-images-in-flight <n>', 'default 10', positiveInt)
    .option('--max-videos-in-flight <n>', 'default 5', positiveInt)
    .option('--daily-cap <credits>', "the key's daily cap (default 20000)", positiveInt)
    .option('--max-credits <credits>', 'budget for this run, net of refunds (default budget.maxCredits)', positiveInt)
    .option('--poll-wait <s>', 'long-poll seconds (1 to 30, default 30)', pollWait)
    .option('--max-retries <n>', 'new attempts after a job fails or expires (default 2)', nonNegativeInt)
    .option('--max-blocked <n>', 'stop at this many blocked submissions in 7 days (default 20, at most 29)', maxBlocked)
    .option(
      '--canary <n|p%>',
      'run this many items first (a count, or a percentage such as 1%), spread over the models, and go on only if they pass',
      canarySize,
    )
    .option(
      '--notify <url>',
      'POST a small JSON event to this webhook when the run ends, stops early, waits for the daily cap, or stalls',
    )
    .option('--notify-command <cmd>', 'run this command with the event as JSON on stdin, instead of a webhook')
    .option(
      '--only <selector>',
      'run just these items now (an id, a glob such as "sku-1*", or tag:NAME; repeatable), and what they wait for; a later plain run does the rest',
      (value: string, earlier: string[] = []) => [...earlier, value],
    )
    .option(
      '--unreachable-minutes <m>',
      'exit 4 after the service has answered nothing for this long (decimals allowed; default 30); a shorter outage is waited out',
      positiveNumber,
    )
    .option(
      '--stall-minutes <m>',
      'with --notify: minutes without progress that make a "stalled" event (default 30)',
      positiveNumber,
    )
    .option(
      '--canary-max-failures <n>',
      'canary items that may fail or be blocked and the run still go on (default 0)',
      nonNegativeInt,
    )
    .option('--redo-changed', 'resubmit items whose content changed after they were submitted')
    .option(
      '--redo-rejected',
      'regenerate the items whose current output was rejected in genbatch review: one new attempt each; the rejected outputs stay on disk',
    )
    .option('--max-output-mb <n>', 'refuse an output larger than this (default 2048)', positiveInt)
    .option('--sidecars', 'also write a metadata file (<output>.json) next to each output')
    .option(
      '--time-scale <x>',
      'divide the key day and the default rate windows by this (rehearsals on a time-scaled simulator; 60 with --simulate)',
      positiveNumber,
    )
    .option(
      '--coordinator <url>',
      "a postgres:// URL: every genbatch process using it shares each key's limits (default GENBATCH_COORDINATOR; none: this process is the key's only user)",
    )
    .option('--json', 'at the end, print the run summary as JSON (progress stays on stderr)');
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
        const { controlCommand } = await import('./commands/control-commands.js');
        ctx.print(await controlCommand(command, manifest, opts, ctx.io.cwd));
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
      ctx.print(await (await stateCommands()).reportCommand(manifest, opts, ctx.io.cwd)),
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
  program
    .command('review')
    .argument('<manifest>')
    .description(
      'a local web app to watch a run live and approve or reject every output with the keyboard (loopback, a token in its URL); works beside a running run',
    )
    .option('--state <path>', 'the SQLite state file')
    .option('--simulate', "the rehearsal's state (run --simulate), not the real run's")
    .option('--port <n>', 'port (0 picks a free one)', port, 0)
    .option('--host <address>', 'address to listen on (loopback unless you say otherwise)', '127.0.0.1')
    .option('--json', 'print where it serves as JSON (url, port, state, outDir); the keys help goes to stderr')
    .action(async (manifest: string, opts) => {
      const { reviewCommand } = await import('./commands/review.js');
      const { server, banner, serving } = await reviewCommand(manifest, opts, ctx.io.cwd);
      if (opts.json) {
        ctx.print(JSON.stringify(serving, null, 2));
        ctx.io.stderr.write(`${banner}\n`);
      } else ctx.print(banner);
      await ctx.io.untilStopped();
      await server.close();
    });
}

function addSimulate(program: Command, ctx: CommandContext): void {
  simulatorFaults(
    simulatorChoices(program.command('simulate').description('start the embedded service simulator on loopback')),
  ).action(async (opts) => {
    const { simulateCommand } = await import('./commands/simulate.js');
    const { simulator, banner } = await simulateCommand(opts);
    ctx.print(banner);
    await ctx.io.untilStopped();
    await simulator.close();
  });
}

/** The simulator's setup: where it listens, its time, its account and keys, and its choices where the spec is silent. */
function simulatorChoices(cmd: Command): Command {
  return cmd
    .option('--port <n>', 'port (0 picks a free one)', port, 0)
    .option('--host <address>', 'loopback address to listen on', '127.0.0.1')
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
      'go off the network at that charge (its answer is lost) for that many real seconds: refuse (default), reset or hang; repeatable',
      outage,
    );
}
