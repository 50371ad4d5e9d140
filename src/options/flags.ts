import { MAX_OUTPUT_BYTES } from '../download/download.js';
import { DEFAULT_KEY_LIMITS, formatRate } from '../scheduler/limits.js';
import type { Patience } from '../sink/index.js';
import { flag } from './flag.js';
import {
  canarySize,
  maxBlocked,
  mediaType,
  nonNegativeInt,
  pollWait,
  port,
  positiveInt,
  positiveNumber,
  rate,
} from './parse.js';

// Every flag of every command, declared once, with its default. A flag two commands share is one declaration,
// named here, in each command's group.

const repeatable = (value: string, earlier: string[] = []): string[] => [...earlier, value];
const commaList = (value: string, earlier: string[] = []): string[] => [
  ...earlier,
  ...value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean),
];

/** How a command reaches the service: its base URL, or the embedded simulator. */
export const CONNECTION_FLAGS = {
  baseUrl: flag({
    flags: '--base-url <url>',
    help: 'the service base URL, ending in /v1',
    defaultText: 'GENBATCH_BASE_URL',
  }),
  simulate: flag({
    flags: '--simulate',
    help: 'use an in-process simulator instead of the service (no key, no credits)',
  }),
};

/** The state a command reads: the run's, or its rehearsal's. */
const STATE = flag({ flags: '--state <path>', help: 'the SQLite state file' });
const REHEARSAL = flag({ flags: '--simulate', help: "the rehearsal's state (run --simulate), not the real run's" });
const SIDECARS = flag({ flags: '--sidecars', help: 'also write a metadata file (<output>.json) next to each output' });

/** A command that reads a state: which one, and whether to print JSON (`json` says what is printed). */
const stateFlags = (json: string) => ({
  state: STATE,
  simulate: REHEARSAL,
  json: flag({ flags: '--json', help: json }),
});

/** What `run` takes, by option name. */
export const RUN_FLAGS = {
  ...CONNECTION_FLAGS,
  state: flag({ ...STATE, defaultText: '.genbatch/<name>.sqlite beside the manifest' }),
  out: flag({
    flags: '--out <dir>',
    help: 'where outputs go: a folder, or s3://BUCKET/PREFIX (endpoint, region and credentials from the AWS environment)',
    defaultText: "the manifest's output.dir, else out/<name> beside it",
  }),
  submitRate: flag({
    flags: '--submit-rate <N/W>',
    help: 'submissions per window',
    parse: rate,
    defaultText: `${formatRate(DEFAULT_KEY_LIMITS.submit)}, the window divided by --time-scale`,
  }),
  readRate: flag({
    flags: '--read-rate <N/W>',
    help: 'reads per window',
    parse: rate,
    defaultText: `${formatRate(DEFAULT_KEY_LIMITS.read)}, the window divided by --time-scale`,
  }),
  uploadRate: flag({
    flags: '--upload-rate <N/W>',
    help: 'upload grants per window',
    parse: rate,
    defaultText: `${formatRate(DEFAULT_KEY_LIMITS.upload)}, the window divided by --time-scale`,
  }),
  maxImagesInFlight: flag({
    flags: '--max-images-in-flight <n>',
    help: 'image jobs in flight',
    parse: positiveInt,
    default: DEFAULT_KEY_LIMITS.maxImagesInFlight,
  }),
  maxVideosInFlight: flag({
    flags: '--max-videos-in-flight <n>',
    help: 'video jobs in flight',
    parse: positiveInt,
    default: DEFAULT_KEY_LIMITS.maxVideosInFlight,
  }),
  dailyCap: flag({
    flags: '--daily-cap <credits>',
    help: "the key's daily cap (a key whose /me says a lower one keeps its own)",
    parse: positiveInt,
    default: DEFAULT_KEY_LIMITS.dailyCap,
  }),
  maxCredits: flag({
    flags: '--max-credits <credits>',
    help: 'budget for this run, net of refunds',
    parse: positiveInt,
    defaultText: "the manifest's budget.maxCredits, else none",
  }),
  pollWait: flag({ flags: '--poll-wait <s>', help: 'long-poll seconds (1 to 30)', parse: pollWait, default: 30 }),
  maxRetries: flag({
    flags: '--max-retries <n>',
    help: 'new attempts after a job fails or expires',
    parse: nonNegativeInt,
    default: 2,
  }),
  maxBlocked: flag({
    flags: '--max-blocked <n>',
    help: 'stop at this many blocked submissions in 7 days (at most 29)',
    parse: maxBlocked,
    default: 20,
  }),
  canary: flag({
    flags: '--canary <n|p%>',
    help: 'run this many items first (a count, or a percentage such as 1%), spread over the models, and go on only if they pass',
    parse: canarySize,
  }),
  notify: flag({
    flags: '--notify <url>',
    help: 'POST a small JSON event to this webhook when the run ends, stops early, waits for the daily cap, or stalls',
  }),
  notifyCommand: flag({
    flags: '--notify-command <cmd>',
    help: 'run this command with the event as JSON on stdin, instead of a webhook',
  }),
  only: flag({
    flags: '--only <selector>',
    help: 'run just these items now (an id, a glob such as "sku-1*", or tag:NAME; repeatable), and what they wait for; a later plain run does the rest',
    parse: repeatable,
  }),
  unreachableMinutes: flag({
    flags: '--unreachable-minutes <m>',
    help: 'exit 4 after the service (or the bucket of --out s3://...) has answered nothing but faults for this long (decimals allowed); a shorter outage is waited out',
    parse: positiveNumber,
    // The bucket's policy gives up when the service's watch does: one declaration of both.
    default: 30,
  }),
  stallMinutes: flag({
    flags: '--stall-minutes <m>',
    help: 'with --notify: minutes without progress that make a "stalled" event',
    parse: positiveNumber,
    default: 30,
  }),
  canaryMaxFailures: flag({
    flags: '--canary-max-failures <n>',
    help: 'canary items that may fail or be blocked and the run still go on',
    parse: nonNegativeInt,
    default: 0,
  }),
  redoChanged: flag({
    flags: '--redo-changed',
    help: 'resubmit items whose content changed after they were submitted',
  }),
  redoRejected: flag({
    flags: '--redo-rejected',
    help: 'regenerate the items whose current output was rejected in genbatch review: one new attempt each; the rejected outputs stay on disk',
  }),
  idleTimeout: flag({
    flags: '--idle-timeout <s>',
    help: 'abandon a download, an upload or a bucket request that moves no byte for this long, and send it again (decimals allowed)',
    parse: positiveNumber,
    default: 30,
  }),
  keepLocal: flag({
    flags: '--keep-local',
    help: 'with --out s3://...: keep the local file of each output once it is published',
  }),
  maxUnpublishedMb: flag({
    flags: '--max-unpublished-mb <n>',
    help: 'with --out s3://...: submissions wait while this much of saved outputs waits to be published',
    parse: positiveInt,
    default: 2048,
  }),
  maxOutputMb: flag({
    flags: '--max-output-mb <n>',
    help: 'refuse an output larger than this',
    parse: positiveInt,
    default: MAX_OUTPUT_BYTES / 1024 ** 2,
  }),
  sidecars: SIDECARS,
  timeScale: flag({
    flags: '--time-scale <x>',
    help: 'divide the key day and the default rate windows by this (rehearsals on a time-scaled simulator)',
    parse: positiveNumber,
    defaultText: '1, or 60 with --simulate',
  }),
  coordinator: flag({
    flags: '--coordinator <url>',
    help: "a postgres:// URL: every genbatch process using it shares each key's limits",
    defaultText: "GENBATCH_COORDINATOR, else none: this process is the key's only user",
  }),
  waitForDecisions: flag({
    flags: '--wait-for-decisions',
    help: "stay while items wait for a decision on their gates (the manifest's approved), sending each once its gates are approved; without it, a run left with only such items ends (exit 1)",
  }),
  takeOver: flag({
    flags: '--take-over',
    help: 'take the output place over from another genbatch process whose lease has not lapsed: only when you know that machine is gone (its lease lapses by itself within 2 minutes)',
  }),
  json: flag({
    flags: '--json',
    help: 'at the end, print the run summary as JSON (progress stays on stderr)',
  }),
};

/**
 * What `estimate` takes: every flag of `run`, so `run` can be priced by its own command line. `--only`, the
 * limits, `--daily-cap` and `--max-credits` change the figures; the others change nothing here.
 */
export const ESTIMATE_FLAGS = {
  ...RUN_FLAGS,
  json: flag({ flags: '--json', help: 'print the figures as JSON' }),
  state: flag({
    flags: '--state <path>',
    help: "a run's state file: the estimate then also says what remains to spend",
    defaultText: "the manifest's own, when it has run",
  }),
  redoRejected: flag({
    flags: '--redo-rejected',
    help: 'also count the items rejected in genbatch review, as run --redo-rejected makes them again',
  }),
};

/** What `validate` takes. */
export const VALIDATE_FLAGS = {
  ...CONNECTION_FLAGS,
  online: flag({
    flags: '--online',
    help: 'also check models, kinds, modes, allowed values and key scopes against the service',
  }),
  json: flag({ flags: '--json', help: 'print the result (or every issue) as JSON' }),
};

/** What `status`, `pause`, `resume` and `drain` take. */
export const STATE_FLAGS = stateFlags('print as JSON');

/** What `reject` takes. */
export const REJECT_FLAGS = {
  ...stateFlags('print each decision and what it unlocked or skipped as JSON'),
  note: flag({ flags: '--note <text>', help: 'a note kept with each decision (review shows it)' }),
  by: flag({
    flags: '--by <name>',
    help: 'who decides, as the decision record keeps it',
    defaultText: 'GENBATCH_DECIDER, else the OS user',
  }),
};

/** What `approve` takes. */
export const APPROVE_FLAGS = {
  ...REJECT_FLAGS,
  waiting: flag({
    flags: '--waiting',
    help: 'approve every gate an item waits on whose current version is made and undecided',
  }),
};

/** What `report` takes. */
export const REPORT_FLAGS = {
  ...stateFlags('print the files written as JSON'),
  out: flag({ flags: '--out <dir>', help: 'the output dir the run wrote to', defaultText: 'the one it recorded' }),
  html: flag({
    flags: '--html',
    help: 'also write index.html, a gallery of the outputs that opens from the file system',
  }),
  sidecars: SIDECARS,
};

/**
 * What `retry` takes. Its lists take one value (or a comma-separated few) per flag, repeatable: a list that took
 * every word after it swallowed the manifest (`retry --code GENERATION_FAILED catalog.yaml`).
 */
export const RETRY_FLAGS = {
  ...stateFlags('print what was put back as JSON'),
  code: flag({
    flags: '--code <code>',
    help: 'only items that failed with this code (repeatable, or CODE,CODE)',
    parse: commaList,
  }),
  id: flag({
    flags: '--id <id>',
    help: 'only this item (repeatable, or ID,ID; also puts back an item stopped on a key conflict: it is paid again)',
    parse: commaList,
  }),
  rejected: flag({
    flags: '--rejected',
    help: 'put back the done items whose current output was rejected in genbatch review',
  }),
};

/** What `reconcile` takes. */
export const RECONCILE_FLAGS = {
  ...CONNECTION_FLAGS,
  state: STATE,
  json: flag({ flags: '--json', help: 'print as JSON' }),
};

/** What `models` takes. */
export const MODELS_FLAGS = {
  ...CONNECTION_FLAGS,
  type: flag({ flags: '--type <type>', help: 'image or video', parse: mediaType }),
  json: flag({ flags: '--json', help: 'print the catalog entries as JSON' }),
};

/** What `me` takes. */
export const ME_FLAGS = {
  ...CONNECTION_FLAGS,
  json: flag({ flags: '--json', help: 'print the response as JSON' }),
};

/** The local servers' address: loopback unless the user says otherwise, any free port by default. */
export const SERVER_FLAGS = {
  port: flag({ flags: '--port <n>', help: 'port (0 picks a free one)', parse: port, default: 0 }),
  host: flag({
    flags: '--host <address>',
    help: "the one address to listen on: loopback, or one of this machine's addresses (said as reachable from other machines, the token still needed); every address at once (0.0.0.0, ::) is refused",
    default: '127.0.0.1',
  }),
};

/** What `review` takes. */
export const REVIEW_FLAGS = {
  ...stateFlags('print where it serves as JSON (url, port, state, outDir); the keys help goes to stderr'),
  ...SERVER_FLAGS,
  by: flag({
    flags: '--by <name>',
    help: 'who decides in this app, as the decision record keeps it',
    defaultText: 'GENBATCH_DECIDER, else the OS user',
  }),
};

/** What `metrics` takes. */
export const METRICS_FLAGS = {
  ...stateFlags('print where it serves as JSON (url, port, state)'),
  tokenFile: flag({
    flags: '--token-file <path>',
    help: 'the token scrapes must carry, from the first line of a file',
    defaultText: 'a random one',
  }),
  ...SERVER_FLAGS,
};

/** What the program itself takes, before any command. */
export const PROGRAM_FLAGS = {
  color: flag({ flags: '--no-color', help: 'no colour (also NO_COLOR=1); colour is only ever used on a terminal' }),
};

/** A bucket's patience where no flag sets it (report, review): the defaults of --idle-timeout and --unreachable-minutes. */
export const DEFAULT_PATIENCE: Patience = {
  idleTimeoutMs: RUN_FLAGS.idleTimeout.default! * 1000,
  unreachableMs: RUN_FLAGS.unreachableMinutes.default! * 60_000,
};
