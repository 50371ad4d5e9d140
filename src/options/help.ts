import { EXIT_MEANINGS } from '../util/exit-error.js';

/** What genbatch reads from the environment: never a flag for a secret. */
const ENVIRONMENT: readonly [string, string][] = [
  ['GENBATCH_API_KEY', 'the API key (never a flag, never logged or stored)'],
  ['GENBATCH_API_KEYS', 'several keys of one account, commas or newlines between them (instead of GENBATCH_API_KEY)'],
  ['GENBATCH_BASE_URL', "the service's base URL, ending in /v1 (or --base-url)"],
  ['GENBATCH_COORDINATOR', 'a postgres:// URL: processes sharing a key share its limits (or --coordinator)'],
  [
    'AWS_REGION, AWS_ACCESS_KEY_ID, …',
    "the bucket of --out s3://… (the AWS SDK's chain; AWS_ENDPOINT_URL for S3-compatible stores)",
  ],
  ['NO_COLOR', 'no colour (also --no-color)'],
];

/** The footer every command's --help ends with: the environment it reads, and what its exit code means. */
export function helpFooter(): string {
  const width = Math.max(...ENVIRONMENT.map(([name]) => name.length));
  const env = ENVIRONMENT.map(([name, what]) => `  ${name.padEnd(width)}  ${what}`);
  const exits = EXIT_MEANINGS.map(({ code, meaning }) => `  ${String(code).padStart(3)}  ${meaning}`);
  return ['', 'Environment:', ...env, '', 'Exit codes:', ...exits].join('\n');
}
