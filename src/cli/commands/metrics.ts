import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { startMetricsServer, type MetricsServer } from '../../library/metrics.js';
import { usageError } from '../../library/outcome.js';
import { exposure, listenError, refuseWildcard } from './local-server.js';
import { withDefaults, type FlagValues } from '../../options/flag.js';
import { METRICS_FLAGS } from '../../options/flags.js';
import { statePathOf } from '../../library/state.js';

export type MetricsFlags = FlagValues<typeof METRICS_FLAGS>;

/** What `metrics --json` prints: where to scrape. */
export interface MetricsServing {
  url: string;
  port: number;
  state: string;
}

/** Serves the manifest's state as Prometheus metrics: the server, and the lines to print. */
export async function metricsCommand(
  path: string,
  flags: MetricsFlags,
  cwd: string,
): Promise<{ server: MetricsServer; banner: string; serving: MetricsServing }> {
  const { host, port } = withDefaults(flags, METRICS_FLAGS) as Required<Pick<MetricsFlags, 'host' | 'port'>>;
  refuseWildcard(host);
  // The state need not exist yet: a scraper set up before the first run sees genbatch_state_present 0.
  const { name, statePath } = await statePathOf(path, flags, cwd);
  const token = flags.tokenFile ? tokenFrom(resolve(cwd, flags.tokenFile)) : undefined;
  let server: MetricsServer;
  try {
    server = await startMetricsServer({ statePath, host, port, ...(token ? { token } : {}) });
  } catch (error) {
    throw listenError(error, 'the metrics server');
  }
  const banner = [
    ...exposure(host),
    `metrics of ${name} (state ${statePath}), read from the state at each scrape`,
    `scrape ${server.url}`,
    `(Prometheus: metrics_path /metrics, the token as a bearer token${flags.tokenFile ? ` from ${flags.tokenFile}` : ''}; see docs/metrics.md). Ctrl-C stops.`,
  ].join('\n');
  return { server, banner, serving: { url: server.url, port: server.port, state: statePath } };
}

/** The token a scraper keeps in a file (Prometheus' credentials_file): its first line. */
function tokenFrom(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw usageError(`--token-file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  const token = text.split(/\r?\n/)[0]!.trim();
  if (token.length < 16)
    throw usageError(`--token-file ${file}: its first line must hold a token of 16 characters or more`);
  return token;
}
