import { Option, type Command } from 'commander';
import { DEFAULT_KEY_LIMITS, formatRate } from '../scheduler/limits.js';
import { canarySize, maxBlocked, nonNegativeInt, pollWait, port, positiveInt, positiveNumber, rate } from './parse.js';

/**
 * One flag, declared once: its syntax, what it does, how its value is read
 * and its default. The help text says the default from here, and the command
 * takes it from here (`withDefaults`), so the two cannot drift apart.
 */
export interface FlagSpec {
  flags: string;
  help: string;
  /** Reads the flag's value (and, for a repeatable flag, what it collected before). */
  parse?: (value: string, previous?: never) => unknown;
  /** Filled in when the flag is not given. */
  default?: unknown;
  /** How the help says a default that depends on other flags, which the command works out itself. */
  defaultText?: string;
}

const spec = (s: FlagSpec) => s;
const repeatable = (value: string, earlier: string[] = []): string[] => [...earlier, value];

/** What `run` takes beyond the connection, by option name. */
export const RUN_FLAGS = {
  state: spec({
    flags: '--state <path>',
    help: 'the SQLite state file',
    defaultText: '.genbatch/<name>.sqlite beside the manifest',
  }),
  out: spec({
    flags: '--out <dir>',
    help: 'where outputs go: a folder, or s3://BUCKET/PREFIX (endpoint, region and credentials from the AWS environment)',
    defaultText: "the manifest's output.dir, else out/<name> beside it",
  }),
  submitRate: spec({
    flags: '--submit-rate <N/W>',
    help: 'submissions per window',
    parse: rate,
    defaultText: `${formatRate(DEFAULT_KEY_LIMITS.submit)}, the window divided by --time-scale`,
  }),
  readRate: spec({
    flags: '--read-rate <N/W>',
    help: 'reads per window',
    parse: rate,
    defaultText: `${formatRate(DEFAULT_KEY_LIMITS.read)}, the window divided by --time-scale`,
  }),
  uploadRate: spec({
    flags: '--upload-rate <N/W>',
    help: 'upload grants per window',
    parse: rate,
    defaultText: `${formatRate(DEFAULT_KEY_LIMITS.upload)}, the window divided by --time-scale`,
  }),
  maxImagesInFlight: spec({
    flags: '--max-images-in-flight <n>',
    help: 'image jobs in flight',
    parse: positiveInt,
    default: DEFAULT_KEY_LIMITS.imagesInFlight,
  }),
  maxVideosInFlight: spec({
    flags: '--max-videos-in-flight <n>',
    help: 'video jobs in flight',
    parse: positiveInt,
    default: DEFAULT_KEY_LIMITS.videosInFlight,
  }),
  dailyCap: spec({
    flags: '--daily-cap <credits>',
    help: "the key's daily cap",
    parse: positiveInt,
    default: DEFAULT_KEY_LIMITS.dailyCap,
  }),
  maxCredits: spec({
    flags: '--max-credits <credits>',
    help: 'budget for this run, net of refunds',
    parse: positiveInt,
    defaultText: "the manifest's budget.maxCredits, else none",
  }),
  pollWait: spec({ flags: '--poll-wait <s>', help: 'long-poll seconds (1 to 30)', parse: pollWait, default: 30 }),
  maxRetries: spec({
    flags: '--max-retries <n>',
    help: 'new attempts after a job fails or expires',
    parse: nonNegativeInt,
    default: 2,
  }),
  maxBlocked: spec({
    flags: '--max-blocked <n>',
    help: 'stop at this many blocked submissions in 7 days (at most 29)',
    parse: maxBlocked,
    default: 20,
  }),
  canary: spec({
    flags: '--canary <n|p%>',
    help: 'run this many items first (a count, or a percentage such as 1%), spread over the models, and go on only if they pass',
    parse: canarySize,
  }),
  notify: spec({
    flags: '--notify <url>',
    help: 'POST a small JSON event to this webhook when the run ends, stops early, waits for the daily cap, or stalls',
  }),
  notifyCommand: spec({
    flags: '--notify-command <cmd>',
    help: 'run this command with the event as JSON on stdin, instead of a webhook',
  }),
  only: spec({
    flags: '--only <selector>',
    help: 'run just these items now (an id, a glob such as "sku-1*", or tag:NAME; repeatable), and what they wait for; a later plain run does the rest',
    parse: repeatable,
  }),
  unreachableMinutes: spec({
    flags: '--unreachable-minutes <m>',
    help: 'exit 4 after the service (or the bucket of --out s3://...) has answered nothing but faults for this long (decimals allowed); a shorter outage is waited out',
    parse: positiveNumber,
    default: 30,
  }),
  stallMinutes: spec({
    flags: '--stall-minutes <m>',
    help: 'with --notify: minutes without progress that make a "stalled" event',
    parse: positiveNumber,
    default: 30,
  }),
  canaryMaxFailures: spec({
    flags: '--canary-max-failures <n>',
    help: 'canary items that may fail or be blocked and the run still go on',
    parse: nonNegativeInt,
    default: 0,
  }),
  redoChanged: spec({
    flags: '--redo-changed',
    help: 'resubmit items whose content changed after they were submitted',
  }),
  redoRejected: spec({
    flags: '--redo-rejected',
    help: 'regenerate the items whose current output was rejected in genbatch review: one new attempt each; the rejected outputs stay on disk',
  }),
  idleTimeout: spec({
    flags: '--idle-timeout <s>',
    help: 'abandon a download, an upload or a bucket request that moves no byte for this long, and send it again (decimals allowed)',
    parse: positiveNumber,
    default: 30,
  }),
  keepLocal: spec({
    flags: '--keep-local',
    help: 'with --out s3://...: keep the local copy of each output once it is published',
  }),
  maxUnpublishedMb: spec({
    flags: '--max-unpublished-mb <n>',
    help: 'with --out s3://...: submissions wait while this much of saved outputs waits to be published',
    parse: positiveInt,
    default: 2048,
  }),
  maxOutputMb: spec({
    flags: '--max-output-mb <n>',
    help: 'refuse an output larger than this',
    parse: positiveInt,
    default: 2048,
  }),
  sidecars: spec({
    flags: '--sidecars',
    help: 'also write a metadata file (<output>.json) next to each output',
  }),
  timeScale: spec({
    flags: '--time-scale <x>',
    help: 'divide the key day and the default rate windows by this (rehearsals on a time-scaled simulator)',
    parse: positiveNumber,
    defaultText: '1, or 60 with --simulate',
  }),
  coordinator: spec({
    flags: '--coordinator <url>',
    help: "a postgres:// URL: every genbatch process using it shares each key's limits",
    defaultText: "GENBATCH_COORDINATOR, else none: this process is the key's only user",
  }),
  json: spec({
    flags: '--json',
    help: 'at the end, print the run summary as JSON (progress stays on stderr)',
  }),
};

/** What `estimate` takes beyond the connection. */
export const ESTIMATE_FLAGS = {
  json: spec({ flags: '--json', help: 'print the figures as JSON' }),
  state: spec({
    flags: '--state <path>',
    help: "a run's state file: the estimate then also says what remains to spend",
    defaultText: "the manifest's own, when it has run",
  }),
  submitRate: RUN_FLAGS.submitRate,
  maxImagesInFlight: RUN_FLAGS.maxImagesInFlight,
  maxVideosInFlight: RUN_FLAGS.maxVideosInFlight,
  dailyCap: spec({
    flags: '--daily-cap <credits>',
    help: "the key's daily cap",
    parse: positiveInt,
    defaultText: `what /me says, else ${DEFAULT_KEY_LIMITS.dailyCap}`,
  }),
  maxCredits: RUN_FLAGS.maxCredits,
  redoRejected: spec({
    flags: '--redo-rejected',
    help: 'also count the items rejected in genbatch review, as run --redo-rejected makes them again',
  }),
};

/** The local servers' address: loopback unless the user says otherwise, any free port by default. */
export const SERVER_FLAGS = {
  port: spec({ flags: '--port <n>', help: 'port (0 picks a free one)', parse: port, default: 0 }),
  host: spec({
    flags: '--host <address>',
    help: 'address to listen on (loopback unless you say otherwise)',
    default: '127.0.0.1',
  }),
};

/** The help's "(default …)": the value as a user would type it, or the words of a default worked out elsewhere. */
function helpOf(s: FlagSpec): string {
  if (s.defaultText) return `${s.help} (default ${s.defaultText})`;
  if (s.default === undefined) return s.help;
  return `${s.help} (default ${String(s.default)})`;
}

/** Adds the flags to a command; their defaults are not given to commander, so a command can tell a flag given from one left out. */
export function addFlags(cmd: Command, specs: Record<string, FlagSpec>): Command {
  for (const s of Object.values(specs)) {
    const option = new Option(s.flags, helpOf(s));
    if (s.parse) option.argParser(s.parse as (value: string, previous: unknown) => unknown);
    cmd.addOption(option);
  }
  return cmd;
}

/** The flags as given, with each one left out set to its declared default. */
export function withDefaults<T extends object>(given: T, specs: Record<string, FlagSpec>): T {
  const filled: Record<string, unknown> = { ...(given as Record<string, unknown>) };
  for (const [name, s] of Object.entries(specs))
    if (filled[name] === undefined && s.default !== undefined) filled[name] = s.default;
  return filled as T;
}
