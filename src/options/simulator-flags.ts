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
  timeScale: flag({ flags: '--time-scale <x>', help: 'divide every service duration by this', parse: positiveNumber }),
  seed: flag({ flags: '--seed <n>', help: 'seed for the simulated randomness', parse: nonNegativeNumber }),
  credits: flag({ flags: '--credits <n>', help: 'starting balance', parse: nonNegativeNumber }),
  dailyCap: flag({
    flags: '--daily-cap <credits>',
    help: "each key's daily credit cap (at most 20,000, the spec's default)",
    parse: keyDailyCap,
  }),
  keys: flag({
    flags: '--keys <n>',
    help: 'keys of the one simulated account (1 to 5): one balance, each key its own limits and daily cap',
    parse: keyCount,
  }),
  scopes: flag({
    flags: '--scopes <list>',
    help: "a key's scopes: image, video or image,video; repeat for each key in order (one alone is every key's)",
    parse: scopes,
  }),
  revokeAfter: flag({
    flags: '--revoke-after <requests[:key]>',
    help: 'the operator revokes a key (the first by default) after that many requests: 401 from then on; repeatable',
    parse: revokeAfter,
  }),
  accountState: flag({
    flags: '--account-state <state>',
    help: "the account's standing: ok, not-eligible, api-disabled or suspended (every request is refused with the spec's 403 code)",
    parse: accountState,
  }),
  jobVisibility: flag({
    flags: '--job-visibility <reading>',
    help: "which jobs a key lists and reads, where the spec is silent: account (every job of the account, the default) or key (its own and the web application's)",
    parse: jobVisibility,
  }),
  maxPromptLength: flag({
    flags: '--max-prompt-length <n>',
    help: 'longest prompt accepted (a simulator choice; default 4000)',
    parse: positiveInt,
  }),
  maxImageUploadMb: flag({
    flags: '--max-image-upload-mb <n>',
    help: 'largest image upload (a simulator choice; default 20)',
    parse: positiveNumber,
  }),
  maxVideoUploadMb: flag({
    flags: '--max-video-upload-mb <n>',
    help: 'largest video upload (a simulator choice; default 200)',
    parse: positiveNumber,
  }),
  failureRate: flag({ flags: '--failure-rate <p>', help: 'share of jobs that end FAILED', parse: probability }),
  expiryRate: flag({ flags: '--expiry-rate <p>', help: 'share of jobs that end EXPIRED', parse: probability }),
  moderationRate: flag({
    flags: '--moderation-rate <p>',
    help: 'share of submissions blocked by moderation',
    parse: probability,
  }),
  unavailableRate: flag({
    flags: '--unavailable-rate <p>',
    help: 'share of submissions answered 503',
    parse: probability,
  }),
  dropRate: flag({
    flags: '--drop-rate <p>',
    help: 'share of created jobs whose response is dropped',
    parse: probability,
  }),
  latency: flag({
    flags: '--latency <ms>',
    help: 'added latency per request, N or MIN-MAX milliseconds',
    parse: range,
  }),
  imageSeconds: flag({
    flags: '--image-seconds <s>',
    help: 'image job run time, N or MIN-MAX service seconds',
    parse: range,
  }),
  videoSeconds: flag({
    flags: '--video-seconds <s>',
    help: 'video job run time, N or MIN-MAX service seconds',
    parse: range,
  }),
  linkTtl: flag({ flags: '--link-ttl <s>', help: 'output link lifetime in service seconds', parse: positiveNumber }),
  uploadTtl: flag({
    flags: '--upload-ttl <s>',
    help: 'uploaded material lifetime in service seconds',
    parse: positiveNumber,
  }),
  outage: flag({
    flags: '--outage <charge:seconds[:mode]>',
    help: 'go off the network at that charge (its answer is lost) for that many real seconds: refuse (default), reset, hang, or blackhole (requests read and never answered, even after it ends); repeatable',
    parse: outage,
  }),
};
