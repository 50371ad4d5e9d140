import { ApiClient } from '../api/index.js';
import { KeyPoolError, keyFingerprint, keysFromEnv, type PoolKey } from '../api/key-pool.js';
import type { RunningSimulator } from '../simulator/index.js';
import { EXIT, ExitError, usageError } from '../util/exit-error.js';
import type { FlagValues } from '../options/flag.js';
import type { CONNECTION_FLAGS } from '../options/flags.js';

/** How a command reaches the service: `--base-url`, `--simulate`. */
export type ConnectionFlags = FlagValues<typeof CONNECTION_FLAGS>;

export interface Connection {
  client: ApiClient;
  /** The fingerprint of `client`'s key: what the state binds attempts to. */
  keyFingerprint: string;
  /** Every key's client, the first being `client` (a command that needs one key, such as models, uses the first). */
  keys: { fingerprint: string; client: ApiClient }[];
  /** Set when --simulate started an in-process simulator. */
  simulator?: RunningSimulator;
  close(): Promise<void>;
}

/** Defaults < environment < flags. The key comes from the environment only, never a flag. */
export async function connect(
  flags: ConnectionFlags,
  env: NodeJS.ProcessEnv,
  simulatorTimeScale = 60,
): Promise<Connection> {
  if (flags.simulate) {
    // Only a rehearsal loads the simulator: a run against the service starts without it.
    const { startSimulator } = await import('../simulator/index.js');
    const simulator = await startSimulator({ timeScale: simulatorTimeScale });
    const client = new ApiClient({ baseUrl: simulator.baseUrl, apiKey: simulator.apiKey });
    const fingerprint = keyFingerprint(simulator.apiKey);
    return {
      client,
      keyFingerprint: fingerprint,
      keys: [{ fingerprint, client }],
      simulator,
      close: async () => {
        await client.close();
        await simulator.close();
      },
    };
  }
  const baseUrl = flags.baseUrl ?? env.GENBATCH_BASE_URL;
  if (!baseUrl) {
    throw usageError(
      'No service base URL. Set GENBATCH_BASE_URL (or pass --base-url URL), or add --simulate to use the embedded simulator.',
    );
  }
  const versionless = withoutVersion(baseUrl);
  // A base URL that is set but wrong is the environment's fault, as one that reaches another server is.
  if (versionless) throw new ExitError(EXIT.environment, versionless);
  let keys: PoolKey[] | undefined;
  try {
    keys = keysFromEnv(env);
  } catch (error) {
    if (error instanceof KeyPoolError) throw usageError(error.message);
    throw error;
  }
  if (!keys) {
    throw usageError(
      'No API key. Set GENBATCH_API_KEY in the environment (it is never taken as a flag), or add --simulate.',
    );
  }
  const clients: Connection['keys'] = [];
  try {
    for (const { key, fingerprint } of keys)
      clients.push({ fingerprint, client: new ApiClient({ baseUrl, apiKey: key }) });
  } catch (error) {
    throw usageError((error as Error).message);
  }
  const first = clients[0]!;
  return {
    client: first.client,
    keyFingerprint: first.fingerprint,
    keys: clients,
    close: async () => {
      await Promise.all(clients.map((c) => c.client.close()));
    },
  };
}

/** The spec's base address ends with the version segment `v1`; without it every path misses (`GET //me: NOT_FOUND`). */
function withoutVersion(baseUrl: string): string | undefined {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return undefined; // the client says what is wrong with it
  }
  const path = url.pathname.replace(/\/+$/, '');
  if (/\/v1$/.test(path)) return undefined;
  // Another version segment is replaced, not kept in front of /v1.
  const meant = /\/v\d+$/.test(path) ? path.replace(/\/v\d+$/, '/v1') : `${path}/v1`;
  return `The base URL ${url.origin}${url.pathname} does not end in /v1, the API's version segment: every request would miss. Did you mean ${url.origin}${meant} ? Set GENBATCH_BASE_URL (or --base-url) to the address that ends in /v1.`;
}
