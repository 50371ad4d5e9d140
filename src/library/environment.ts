/** The credentials a program gives `run()`, `estimate()` or `validate()` instead of the environment's. */
export interface Credentials {
  /** The API key, or the keys of one account (a pool); default: GENBATCH_API_KEY or GENBATCH_API_KEYS. Never logged or stored. */
  apiKey?: string | readonly string[] | undefined;
  /** The service's address, ending in /v1; default: GENBATCH_BASE_URL. */
  baseUrl?: string | undefined;
  /** Where the rest is read (GENBATCH_COORDINATOR, the bucket's AWS_* settings); default: process.env. */
  env?: NodeJS.ProcessEnv | undefined;
}

/** The environment a command reads, with the keys a program gave in place of the environment's. */
export function environmentFor({ apiKey, env }: Pick<Credentials, 'apiKey' | 'env'>): NodeJS.ProcessEnv {
  const base = env ?? process.env;
  if (apiKey === undefined) return base;
  const { GENBATCH_API_KEY: _one, GENBATCH_API_KEYS: _pool, ...rest } = base;
  return typeof apiKey === 'string'
    ? { ...rest, GENBATCH_API_KEY: apiKey }
    : { ...rest, GENBATCH_API_KEYS: apiKey.join(',') };
}
