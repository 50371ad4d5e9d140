import { DEFAULT_LIMITS, SIMULATOR_DEFAULTS as SIM } from '../simulator/options.js';
import { flag } from './flag.js';
import { SERVER_FLAGS } from './flags.js';
import {
  accountState,
  jobVisibility,
  keyCount,
  keyDailyCap,
  nonNegativeNumber,
  outage,
  positiveInt,
  positiveNumber,
  probability,
  range,
  revokeAfter,
  scopes,
} from './parse.js';

/** What `simulate` takes: where it listens, its time, its account and keys, its choices where the spec is silent, its faults. */
export const SIMULATOR_FLAGS = {
  ...SERVER_FLAGS,
  timeScale: flag({
    flags: '--time-scale <x>',
    help: 'divide every service duration by this',
    parse: positiveNumber,
    defaultText: String(SIM.timeScale),
  }),
  unannounced: flag({
    flags: '--unannounced',
    help: "answer /me as the real service does, without saying this is a simulator: a stand-in for a real run, whose state and outputs are a real run's",
    defaultText: 'off: /me says it is a simulator',
  }),
  seed: flag({
    flags: '--seed <n>',
    help: 'seed for the simulated randomness',
    parse: nonNegativeNumber,
    defaultText: String(SIM.seed),
  }),
  credits: flag({
    flags: '--credits <n>',
    help: 'starting balance',
    parse: nonNegativeNumber,
    defaultText: SIM.credits.toLocaleString('en-US'),
  }),
  dailyCap: flag({
    flags: '--daily-cap <credits>',
    help: "each key's daily credit cap, at most 20,000",
    parse: keyDailyCap,
    defaultText: "20,000, the spec's",
  }),
  keys: flag({
    flags: '--keys <n>',
    help: 'keys of the one simulated account (1 to 5): one balance, each key its own limits and daily cap',
    parse: keyCount,
    defaultText: '1',
  }),
  scopes: flag({
    flags: '--scopes <list>',
    help: "a key's scopes: image, video or image,video; repeat for each key in order (one alone is every key's)",
    parse: scopes,
    defaultText: 'image,video',
  }),
  revokeAfter: flag({
    flags: '--revoke-after <requests[:key]>',
    help: 'the operator revokes a key (the first by default) after that many requests: 401 from then on; repeatable',
    parse: revokeAfter,
    defaultText: 'never',
  }),
  accountState: flag({
    flags: '--account-state <state>',
    help: "the account's standing: ok, not-eligible, api-disabled or suspended (every request is refused with the spec's 403 code)",
    parse: accountState,
    defaultText: 'ok',
  }),
  jobVisibility: flag({
    flags: '--job-visibility <reading>',
    help: "which jobs a key lists and reads, where the spec is silent: account (every job of the account) or key (its own and the web application's)",
    parse: jobVisibility,
    defaultText: 'account',
  }),
  maxPromptLength: flag({
    flags: '--max-prompt-length <n>',
    help: 'longest prompt accepted (a simulator choice)',
    parse: positiveInt,
    defaultText: String(DEFAULT_LIMITS.maxPromptLength),
  }),
  maxImageUploadMb: flag({
    flags: '--max-image-upload-mb <n>',
    help: 'largest image upload (a simulator choice)',
    parse: positiveNumber,
    defaultText: String(DEFAULT_LIMITS.maxImageUploadBytes / 1024 / 1024),
  }),
  maxVideoUploadMb: flag({
    flags: '--max-video-upload-mb <n>',
    help: 'largest video upload (a simulator choice)',
    parse: positiveNumber,
    defaultText: String(DEFAULT_LIMITS.maxVideoUploadBytes / 1024 / 1024),
  }),
  failureRate: flag({
    flags: '--failure-rate <p>',
    help: 'share of jobs that end FAILED',
    parse: probability,
    defaultText: '0',
  }),
  expiryRate: flag({
    flags: '--expiry-rate <p>',
    help: 'share of jobs that end EXPIRED',
    parse: probability,
    defaultText: '0',
  }),
  moderationRate: flag({
    flags: '--moderation-rate <p>',
    help: 'share of submissions blocked by moderation',
    parse: probability,
    defaultText: '0',
  }),
  unavailableRate: flag({
    flags: '--unavailable-rate <p>',
    help: 'share of submissions answered 503',
    parse: probability,
    defaultText: '0',
  }),
  dropRate: flag({
    flags: '--drop-rate <p>',
    help: 'share of created jobs whose response is dropped',
    parse: probability,
    defaultText: '0',
  }),
  latency: flag({
    flags: '--latency <ms>',
    help: 'added latency per request, N or MIN-MAX milliseconds',
    parse: range,
    defaultText: '0',
  }),
  imageSeconds: flag({
    flags: '--image-seconds <s>',
    help: 'image job run time, N or MIN-MAX service seconds',
    parse: range,
    defaultText: SIM.imageSeconds.join('-'),
  }),
  videoSeconds: flag({
    flags: '--video-seconds <s>',
    help: 'video job run time, N or MIN-MAX service seconds',
    parse: range,
    defaultText: SIM.videoSeconds.join('-'),
  }),
  linkTtl: flag({
    flags: '--link-ttl <s>',
    help: 'output link lifetime in service seconds',
    parse: positiveNumber,
    defaultText: String(SIM.linkTtlSeconds),
  }),
  uploadTtl: flag({
    flags: '--upload-ttl <s>',
    help: 'uploaded material lifetime in service seconds',
    parse: positiveNumber,
    defaultText: String(SIM.uploadTtlSeconds),
  }),
  outage: flag({
    flags: '--outage <charge:seconds[:mode]>',
    help: 'go off the network at that charge (its answer is lost) for that many real seconds: refuse (default), reset, hang, or blackhole (requests read and never answered, even after it ends); repeatable',
    parse: outage,
    defaultText: 'none',
  }),
};
