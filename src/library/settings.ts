import { keyTextsIn } from '../api/key-pool.js';
import type { CanarySize, RunRequest } from '../runner/index.js';
import { DEFAULT_KEY_LIMITS, type KeyLimits, type Rate } from '../scheduler/limits.js';
import { bucketSecretsIn } from '../sink/index.js';
import { RUN_FLAGS, withDefaults, type FlagSpec } from '../options/flags.js';
import { usageError } from '../util/exit-error.js';
import type { ConnectionFlags } from './connection.js';

/** The run's settings: the CLI's run flags in camelCase, with their values as the flags' parsers give them. */
export interface RunSettings extends ConnectionFlags {
  state?: string;
  out?: string;
  submitRate?: Rate;
  readRate?: Rate;
  uploadRate?: Rate;
  maxImagesInFlight?: number;
  maxVideosInFlight?: number;
  dailyCap?: number;
  maxCredits?: number;
  pollWait?: number;
  maxRetries?: number;
  maxBlocked?: number;
  canary?: CanarySize;
  canaryMaxFailures?: number;
  notify?: string;
  notifyCommand?: string;
  stallMinutes?: number;
  unreachableMinutes?: number;
  only?: string[];
  redoChanged?: boolean;
  redoRejected?: boolean;
  timeScale?: number;
  maxOutputMb?: number;
  idleTimeout?: number;
  keepLocal?: boolean;
  maxUnpublishedMb?: number;
  sidecars?: boolean;
  coordinator?: string;
}

/** A value as a program may give it: a rate as `'10/60s'` or `{ count, windowMs }`, a canary as `20` or `'1%'`. */
type Given<T> = T extends Rate ? Rate | string : T extends CanarySize ? CanarySize | number | string : T;

/** The settings as `run()` takes them: each one also as its flag's text (`submitRate: '10/60s'`). */
export type GivenSettings = {
  [K in Exclude<keyof RunSettings, 'only'>]?: Given<NonNullable<RunSettings[K]>> | undefined;
} & {
  only?: string[] | string | undefined;
};

/**
 * Settings given by a program, read by the same parsers as the flags (the
 * same checks, the same messages): a string or a number goes through its
 * flag's parser, an object (a rate, a canary) is taken as it is.
 */
export function settingsFrom(given: GivenSettings): RunSettings {
  const specs = RUN_FLAGS as Record<string, FlagSpec>;
  const settings: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(given)) {
    if (value === undefined) continue;
    const spec = specs[name];
    if (name === 'only') settings.only = Array.isArray(value) ? value : [value];
    else if (spec?.parse && (typeof value === 'string' || typeof value === 'number'))
      settings[name] = parsed(spec, name, String(value));
    else settings[name] = value;
  }
  return settings as RunSettings;
}

function parsed(spec: FlagSpec, name: string, value: string): unknown {
  try {
    return spec.parse!(value);
  } catch (error) {
    throw usageError(`${name}: ${(error as Error).message}`);
  }
}

/** The key's limits with time scaled, then the explicit settings (the others at their declared defaults). */
function limitsFrom(f: RunSettings, timeScale: number): KeyLimits {
  const scale = (r: Rate): Rate => ({ count: r.count, windowMs: r.windowMs / timeScale });
  return {
    submit: f.submitRate ?? scale(DEFAULT_KEY_LIMITS.submit),
    read: f.readRate ?? scale(DEFAULT_KEY_LIMITS.read),
    upload: f.uploadRate ?? scale(DEFAULT_KEY_LIMITS.upload),
    imagesInFlight: f.maxImagesInFlight!,
    videosInFlight: f.maxVideosInFlight!,
    dailyCap: f.dailyCap!,
  };
}

/** What the settings ask of the run, settled once: the one place a flag becomes a setting of the run. */
export function requestOf(
  path: string,
  given: RunSettings,
  env: NodeJS.ProcessEnv,
  cwd: string,
  onServiceWait: (reason: string, unreachableMs: number) => void,
): RunRequest {
  checkNotifySettings(given);
  checkOnlySettings(given);
  const flags = withDefaults(given, RUN_FLAGS);
  const rehearsal = flags.simulate ?? false;
  const timeScale = flags.timeScale ?? (rehearsal ? 60 : 1);
  const minutes = flags.unreachableMinutes!;
  return {
    manifestPath: path,
    cwd,
    rehearsal,
    timeScale,
    statePath: flags.state,
    out: flags.out,
    redoChanged: flags.redoChanged ?? false,
    redoRejected: flags.redoRejected ?? false,
    limits: limitsFrom(flags, timeScale),
    coordinatorUrl: flags.coordinator ?? env.GENBATCH_COORDINATOR,
    // A service that answers nothing yet is waited for, as a run waits for it (--unreachable-minutes).
    waitForService: {
      unreachableMs: minutes * 60_000,
      everyMs: Math.min(1_000, Math.max(100, 1_000 / timeScale)),
      onWait: (reason) => onServiceWait(reason, minutes * 60_000),
    },
    secrets: [...keyTextsIn(env), ...bucketSecretsIn(env)],
    keepLocal: flags.keepLocal ?? false,
    env,
    options: {
      pollWaitSeconds: flags.pollWait!,
      maxRetries: flags.maxRetries!,
      ...(flags.maxCredits !== undefined ? { maxCredits: flags.maxCredits } : {}),
      maxBlocked: flags.maxBlocked!,
      ...(flags.canary ? { canary: { size: flags.canary, maxFailures: flags.canaryMaxFailures! } } : {}),
      ...(flags.only ? { only: flags.only } : {}),
      downloadConcurrency: 4,
      maxOutputBytes: flags.maxOutputMb! * 1024 * 1024,
      idleTimeoutMs: flags.idleTimeout! * 1000,
      maxUnpublishedBytes: flags.maxUnpublishedMb! * 1024 * 1024,
    },
  };
}

function checkOnlySettings(flags: RunSettings): void {
  if (!flags.only) return;
  if (flags.canary) throw usageError('--only and --canary each choose what runs first: give one of them.');
  const empty = flags.only.find((s) => s === 'tag:' || s === '');
  if (empty !== undefined) throw usageError(`--only "${empty}": give an id, a glob, or tag:NAME.`);
}

function checkNotifySettings(flags: RunSettings): void {
  if (flags.notify && flags.notifyCommand)
    throw usageError('--notify and --notify-command each say where events go: give one of them.');
  if (flags.notify && !/^https?:\/\/[^/]/i.test(flags.notify))
    throw usageError(`--notify takes an http(s) URL; got one that is not (it is not shown: it may hold a secret).`);
  if (flags.stallMinutes !== undefined && !flags.notify && !flags.notifyCommand)
    throw usageError('--stall-minutes says when to notify of a stall: give --notify URL or --notify-command CMD too.');
}
