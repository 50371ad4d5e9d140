/** Time is passed in, so tests can run the simulator with shrunken or fixed time. */
export interface Clock {
  now(): number;
}

export type Scope = 'image' | 'video';

export interface SimKeyOptions {
  /** The bearer token; generated when omitted. */
  key?: string;
  /** A name for the key in the ledger (the token itself is never recorded). */
  label: string;
  scopes?: Scope[];
  /** Credits per key day; the spec's default is 20,000. */
  dailyCap?: number;
  /** Keys of the same account share its balance. */
  account?: string;
  /** This key's own limits where they are lower (or higher) than the simulator's. */
  limits?: Partial<Pick<SimLimits, KeyLimitName>>;
  /** The operator revokes the key once it has made this many requests: each one after gets 401 UNAUTHENTICATED. */
  revokeAfterRequests?: number;
}

/** The account's standing, for rehearsing the spec's 403 codes: every request of its keys is refused with that code. */
export type AccountState = 'ok' | 'not-eligible' | 'api-disabled' | 'suspended';

/**
 * Which jobs a key sees, where the spec is silent: `account` (the spec's
 * account-level wording: every job of the account, web ones too, listed and
 * read by any of its keys) or `key` (the strictest reading: a key lists and
 * reads the jobs it made, and the web application's).
 */
export type JobVisibility = 'account' | 'key';

/** The limits that belong to a key: each key of an account may have its own. */
export type KeyLimitName =
  | 'submissionsPerWindow'
  | 'readsPerWindow'
  | 'uploadGrantsPerWindow'
  | 'imagesInFlight'
  | 'videosInFlight';

export interface SimulatorOptions {
  /** 0 picks a free port. */
  port?: number;
  /**
   * Outages at set points, for rehearsing a service that goes away: at the
   * `atCharge`-th charge (its answer is lost with the connection) the service
   * goes off the network for `seconds` of real time, then comes back on the
   * same port with all its state.
   */
  outages?: readonly ScheduledOutage[];
  /** Loopback only: the simulator is never reachable from another machine. */
  host?: string;
  /** Every duration of the service (rate windows, job run times, link and upload lifetimes, the day) is divided by this. */
  timeScale?: number;
  seed?: number;
  keys?: SimKeyOptions[];
  /** Starting balance of every account. */
  credits?: number;
  subscriptionCredits?: number;
  /** Probability that an accepted job ends FAILED (refunded). */
  failureRate?: number;
  /** Probability that an accepted job ends EXPIRED (refunded). */
  expiryRate?: number;
  /** Share of prompts moderation blocks (422, no charge). Decided per prompt, as the real service judges the prompt: the same prompt is blocked every time. */
  moderationRate?: number;
  accountState?: AccountState;
  jobVisibility?: JobVisibility;
  /** Probability that a submission gets a 503 (no charge). */
  unavailableRate?: number;
  /** Probability that the response to a newly created (and charged) job is dropped. */
  dropRate?: number;
  /** Extra real milliseconds before each service request is handled: [min, max]. */
  latencyMs?: [number, number];
  /** Job run times in service seconds: [min, max]. Spec: images 10–90 s, videos 1–10 min. */
  imageSeconds?: [number, number];
  videoSeconds?: [number, number];
  /** Outputs per image job. */
  imageOutputs?: number;
  limits?: Partial<SimLimits>;
  /** Output link lifetime in service seconds (spec: 15 minutes). */
  linkTtlSeconds?: number;
  /** How long uploaded material stays usable, in service seconds (not shown by the spec). */
  uploadTtlSeconds?: number;
  /** How many web-application jobs the account already has (they appear in GET /jobs). */
  webJobs?: number;
  /**
   * Whether `/me` shows the key's limits (its daily cap, rates and in-flight
   * slots). The spec does not show their names: off, a client learns them
   * only from the flags and the service's 429s. On by default.
   */
  meShowsLimits?: boolean;
  /**
   * Whether `/me` says this is a simulator (`x-simulator`, with its time
   * scale), so a run keeps what it makes apart from a real run's. Off, it
   * answers as the real service does: a stand-in for a real run. On by default.
   */
  announce?: boolean;
  clock?: Clock;
}

export interface SimLimits {
  submissionsPerWindow: number;
  readsPerWindow: number;
  uploadGrantsPerWindow: number;
  /** The rate window in service seconds. */
  windowSeconds: number;
  imagesInFlight: number;
  videosInFlight: number;
  /** Blocked submissions in the trailing 7 days at which the key loses eligibility. */
  moderationThreshold: number;
  maxPromptLength: number;
  maxImageUploadBytes: number;
  maxVideoUploadBytes: number;
  maxListLimit: number;
  defaultListLimit: number;
  maxWaitSeconds: number;
}

export const DEFAULT_LIMITS: SimLimits = {
  submissionsPerWindow: 10,
  readsPerWindow: 120,
  uploadGrantsPerWindow: 30,
  windowSeconds: 60,
  imagesInFlight: 10,
  videosInFlight: 5,
  moderationThreshold: 30,
  maxPromptLength: 4000,
  maxImageUploadBytes: 20 * 1024 * 1024,
  maxVideoUploadBytes: 200 * 1024 * 1024,
  maxListLimit: 100,
  defaultListLimit: 20,
  maxWaitSeconds: 30,
};

export const DAY_SECONDS = 86_400;
const IDEMPOTENCY_RETENTION_SECONDS = DAY_SECONDS;
const MODERATION_WINDOW_SECONDS = 7 * DAY_SECONDS;

/** Options with every default filled in and every service duration turned into real milliseconds. */
export interface ResolvedOptions {
  timeScale: number;
  seed: number;
  credits: number;
  subscriptionCredits: number;
  failureRate: number;
  expiryRate: number;
  moderationRate: number;
  accountState: AccountState;
  jobVisibility: JobVisibility;
  unavailableRate: number;
  dropRate: number;
  latencyMs: [number, number];
  imageMs: [number, number];
  videoMs: [number, number];
  imageOutputs: number;
  limits: SimLimits;
  windowMs: number;
  linkTtlMs: number;
  uploadTtlMs: number;
  dayMs: number;
  idempotencyRetentionMs: number;
  moderationWindowMs: number;
  webJobs: number;
  meShowsLimits: boolean;
  announce: boolean;
  keys: SimKeyOptions[];
  clock: Clock;
}

/** What the simulator does when told nothing (in service seconds where a duration); `simulate --help` says these. */
export const SIMULATOR_DEFAULTS = {
  timeScale: 1,
  seed: 1,
  credits: 100_000,
  imageSeconds: [10, 90] as [number, number],
  videoSeconds: [60, 600] as [number, number],
  linkTtlSeconds: 15 * 60,
  uploadTtlSeconds: 60 * 60,
} as const;

export function resolveOptions(options: SimulatorOptions): ResolvedOptions {
  const d = SIMULATOR_DEFAULTS;
  const timeScale = options.timeScale ?? d.timeScale;
  if (!(timeScale > 0)) throw new Error(`timeScale must be a positive number, got ${timeScale}`);
  const ms = (seconds: number) => (seconds * 1000) / timeScale;
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const image = options.imageSeconds ?? d.imageSeconds;
  const video = options.videoSeconds ?? d.videoSeconds;
  return {
    timeScale,
    seed: options.seed ?? d.seed,
    credits: options.credits ?? d.credits,
    subscriptionCredits: options.subscriptionCredits ?? 0,
    failureRate: options.failureRate ?? 0,
    expiryRate: options.expiryRate ?? 0,
    moderationRate: options.moderationRate ?? 0,
    accountState: options.accountState ?? 'ok',
    jobVisibility: options.jobVisibility ?? 'account',
    unavailableRate: options.unavailableRate ?? 0,
    dropRate: options.dropRate ?? 0,
    latencyMs: options.latencyMs ?? [0, 0],
    imageMs: [ms(image[0]), ms(image[1])],
    videoMs: [ms(video[0]), ms(video[1])],
    imageOutputs: options.imageOutputs ?? 1,
    limits,
    windowMs: ms(limits.windowSeconds),
    linkTtlMs: ms(options.linkTtlSeconds ?? d.linkTtlSeconds),
    uploadTtlMs: ms(options.uploadTtlSeconds ?? d.uploadTtlSeconds),
    dayMs: ms(DAY_SECONDS),
    idempotencyRetentionMs: ms(IDEMPOTENCY_RETENTION_SECONDS),
    moderationWindowMs: ms(MODERATION_WINDOW_SECONDS),
    webJobs: options.webJobs ?? 3,
    meShowsLimits: options.meShowsLimits ?? true,
    announce: options.announce ?? true,
    keys: options.keys ?? [{ label: 'main' }],
    clock: options.clock ?? { now: () => Date.now() },
  };
}

/**
 * How the service is unreachable: `refuse` closes the port (ECONNREFUSED);
 * `reset` accepts each connection and resets it (ECONNRESET); `hang` accepts
 * each connection and never reads from it (the client's timeout);
 * `blackhole` reads every request and answers none, and the requests it
 * swallowed stay unanswered after it ends (a load balancer that lost its
 * backends): only new requests are answered then.
 */
export type OutageMode = 'refuse' | 'reset' | 'hang' | 'blackhole';

export interface ScheduledOutage {
  atCharge: number;
  seconds: number;
  mode?: OutageMode;
}
