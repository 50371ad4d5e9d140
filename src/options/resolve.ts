import { keyTextsIn } from '../api/key-pool.js';
import { RunClock } from '../scheduler/clock.js';
import { DEFAULT_KEY_LIMITS, type KeyLimits, type Rate } from '../scheduler/limits.js';
import { bucketSecretsIn } from '../sink/index.js';
import { usageError } from '../util/exit-error.js';
import { withDefaults, type FlagSpec, type FlagValues } from './flag.js';
import { RUN_FLAGS } from './flags.js';
import type { CanarySize } from './parse.js';

/** `run`'s flags in camelCase, with their values as the flags' parsers give them. */
export type RunFlags = FlagValues<typeof RUN_FLAGS>;

/** A value as a program may give it: a rate as `'10/60s'` or `{ count, windowMs }`, a canary as `20` or `'1%'`. */
type ProgramValue<T> = T extends Rate ? Rate | string : T extends CanarySize ? CanarySize | number | string : T;

/** `run`'s flags as a program gives them: each one also as its flag's text (`submitRate: '10/60s'`). */
export type ProgramRunFlags = {
  [K in Exclude<keyof RunFlags, 'only'>]?: ProgramValue<NonNullable<RunFlags[K]>> | undefined;
} & {
  only?: string[] | string | undefined;
};

/**
 * A run's options, resolved once from its flags, the environment and the
 * declared defaults, and frozen: every part of the run reads the view of it
 * it needs, and no default is declared anywhere else.
 */
export interface ResolvedRunOptions {
  readonly manifestPath: string;
  readonly cwd: string;
  /** --simulate: a rehearsal on the simulator, whose state and outputs are never a real run's. */
  readonly simulate: boolean;
  /** The run's time: every duration of the service's is scaled by it, and nowhere else. */
  readonly clock: RunClock;
  /** --base-url, else GENBATCH_BASE_URL (read where the connection is made). */
  readonly baseUrl: string | undefined;
  /** --state, else the manifest's own (a rehearsal's `.rehearsal` one, a trial's `.simulated`). */
  readonly statePath: string | undefined;
  /** --out, else the manifest's output dir (a rehearsal's gets `.rehearsal`, a trial's `.simulated`). */
  readonly out: string | undefined;
  /** Outputs going to a bucket: keep each local file once it is published. */
  readonly keepLocal: boolean;
  readonly redoChanged: boolean;
  /** --take-over: the place is taken from a holder whose lease has not lapsed (an operator knows it is gone). */
  readonly takeOver: boolean;
  /** Put the items whose current version was rejected in review back, for a new attempt each. */
  readonly redoRejected: boolean;
  /** Stay while items wait for a decision, sending each once its gates are approved. */
  readonly waitForDecisions: boolean;
  /** The limits the flags give, in the run's real time; each key's own may be lower. */
  readonly limits: KeyLimits;
  readonly coordinatorUrl: string | undefined;
  /** With nothing answering for this long (real milliseconds), the run stops (exit 4). */
  readonly unreachableMs: number;
  /** Long-poll seconds per GET of a job (the spec allows up to 30). */
  readonly pollWaitSeconds: number;
  /** New attempts after a job ends FAILED or EXPIRED. */
  readonly maxRetries: number;
  /** --max-credits: the run's budget, net of refunds (else the manifest's). */
  readonly maxCredits: number | undefined;
  /** Stop before this many blocked submissions in the trailing 7 days (the service's threshold is 30). */
  readonly maxBlocked: number;
  /** Run this many items first and go on only if they pass. */
  readonly canary: { readonly size: CanarySize; readonly maxFailures: number } | undefined;
  /** Run only the items whose id is one of these or matches one of these globs (and what they wait for). */
  readonly only: readonly string[] | undefined;
  readonly downloadConcurrency: number;
  /** Outputs larger than this are refused (an endless body would fill the disk). */
  readonly maxOutputBytes: number;
  /** A transfer or a bucket request that moves no byte for this long (real ms) is abandoned and tried again. */
  readonly idleTimeoutMs: number;
  /** Outputs going to a bucket: submissions wait while more than this many bytes of saved outputs wait. */
  readonly maxUnpublishedBytes: number;
  /** Write a metadata file next to each output at the end. */
  readonly sidecars: boolean;
  /** Where the run's events go when it ends, stops early, waits for the cap or stalls. */
  readonly notify: { readonly url: string } | { readonly command: string } | undefined;
  /** With a notifier: this long without progress makes a "stalled" event. */
  readonly stallMs: number;
  /** Texts the log must never hold (the keys, the bucket's secret). */
  readonly secrets: readonly string[];
  /** Where the keys, the bucket's endpoint, region and credentials are read (the AWS SDK's chain). */
  readonly env: NodeJS.ProcessEnv;
  /**
   * With no --time-scale (and no --simulate): the same options at the time
   * scale the service says it runs at. A time-scaled simulator says so in its
   * /me; the real service never does, and an explicit flag always wins.
   */
  readonly atServiceTimeScale: ((scale: number) => ResolvedRunOptions) | undefined;
  /** Where the time scale came from: --time-scale, a rehearsal's own, the service's word, or none (1). */
  readonly timeScaleFrom: 'flag' | 'simulate' | 'service' | 'none';
}

/** Downloads at once: each holds a connection and a file; the machine's link is shared with the publications. */
const DOWNLOAD_CONCURRENCY = 4;

/**
 * Flags given by a program, read by the same parsers as the command line's
 * (the same checks, the same messages): a string or a number goes through
 * its flag's parser, an object (a rate, a canary) is taken as it is.
 */
export function parseProgramFlags(program: ProgramRunFlags, specs: Record<string, FlagSpec> = RUN_FLAGS): RunFlags {
  const flags: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(program)) {
    if (value === undefined) continue;
    const spec = specs[name];
    if (name === 'only') flags.only = Array.isArray(value) ? value : [value];
    else if (spec?.parse && (typeof value === 'string' || typeof value === 'number'))
      flags[name] = parsed(spec, name, String(value));
    else flags[name] = value;
  }
  return flags as RunFlags;
}

function parsed(spec: FlagSpec, name: string, value: string): unknown {
  try {
    return spec.parse!(value);
  } catch (error) {
    throw usageError(`${name}: ${(error as Error).message}`);
  }
}

/** The one place a run's flag becomes its option: checked together, defaults filled, time scaled, frozen. */
export function resolveRunOptions(
  flags: RunFlags,
  place: { manifestPath: string; cwd: string; env: NodeJS.ProcessEnv; now?: () => number },
): ResolvedRunOptions {
  checkNotify(flags);
  checkOnly(flags);
  const f = withDefaults(flags, RUN_FLAGS);
  const simulate = f.simulate ?? false;
  const clock = new RunClock(place.now ?? Date.now, f.timeScale ?? (simulate ? 60 : 1));
  const { env } = place;
  const limits: KeyLimits = Object.freeze({
    submit: f.submitRate ?? clock.rate(DEFAULT_KEY_LIMITS.submit),
    read: f.readRate ?? clock.rate(DEFAULT_KEY_LIMITS.read),
    upload: f.uploadRate ?? clock.rate(DEFAULT_KEY_LIMITS.upload),
    maxImagesInFlight: f.maxImagesInFlight!,
    maxVideosInFlight: f.maxVideosInFlight!,
    dailyCap: f.dailyCap!,
  });
  return Object.freeze({
    manifestPath: place.manifestPath,
    cwd: place.cwd,
    simulate,
    clock,
    baseUrl: f.baseUrl,
    statePath: f.state,
    out: f.out,
    keepLocal: f.keepLocal ?? false,
    redoChanged: f.redoChanged ?? false,
    takeOver: f.takeOver ?? false,
    redoRejected: f.redoRejected ?? false,
    waitForDecisions: f.waitForDecisions ?? false,
    limits,
    coordinatorUrl: f.coordinator ?? env.GENBATCH_COORDINATOR,
    unreachableMs: f.unreachableMinutes! * 60_000,
    pollWaitSeconds: f.pollWait!,
    maxRetries: f.maxRetries!,
    maxCredits: f.maxCredits,
    maxBlocked: f.maxBlocked!,
    canary: f.canary && Object.freeze({ size: f.canary, maxFailures: f.canaryMaxFailures! }),
    only: f.only && Object.freeze([...f.only]),
    downloadConcurrency: DOWNLOAD_CONCURRENCY,
    maxOutputBytes: f.maxOutputMb! * 1024 * 1024,
    idleTimeoutMs: f.idleTimeout! * 1000,
    maxUnpublishedBytes: f.maxUnpublishedMb! * 1024 * 1024,
    sidecars: f.sidecars ?? false,
    notify: f.notify ? { url: f.notify } : f.notifyCommand ? { command: f.notifyCommand } : undefined,
    stallMs: f.stallMinutes! * 60_000,
    secrets: Object.freeze([...keyTextsIn(env), ...bucketSecretsIn(env)]),
    env,
    atServiceTimeScale:
      flags.timeScale === undefined && !simulate
        ? (scale: number) =>
            Object.freeze({
              ...resolveRunOptions({ ...flags, timeScale: scale }, place),
              timeScaleFrom: 'service' as const,
            })
        : undefined,
    timeScaleFrom: flags.timeScale !== undefined ? 'flag' : simulate ? 'simulate' : 'none',
  });
}

function checkOnly(flags: RunFlags): void {
  if (!flags.only) return;
  if (flags.canary) throw usageError('--only and --canary each choose what runs first: give one of them.');
  const empty = flags.only.find((s) => s === 'tag:' || s === '');
  if (empty !== undefined) throw usageError(`--only "${empty}": give an id, a glob, or tag:NAME.`);
}

function checkNotify(flags: RunFlags): void {
  if (flags.notify && flags.notifyCommand)
    throw usageError('--notify and --notify-command each say where events go: give one of them.');
  if (flags.notify && !/^https?:\/\/[^/]/i.test(flags.notify))
    throw usageError(`--notify takes an http(s) URL; got one that is not (it is not shown: it may hold a secret).`);
  if (flags.stallMinutes !== undefined && !flags.notify && !flags.notifyCommand)
    throw usageError('--stall-minutes says when to notify of a stall: give --notify URL or --notify-command CMD too.');
}
