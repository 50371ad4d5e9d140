import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { guardFor, refusal, type Guard } from '../serve/guard.js';
import { listen } from '../serve/listen.js';
import { StateMetrics } from './registry.js';
import { readSnapshot } from './snapshot.js';

export interface MetricsServerOptions {
  statePath: string;
  host?: string;
  port?: number;
  /** The token every scrape must carry (a bearer token, or `?token=`); a random one when not given. */
  token?: string;
  now?: () => number;
}

export interface MetricsServer {
  /** Where to scrape, token included. */
  url: string;
  port: number;
  token: string;
  close(): Promise<void>;
}

/**
 * `/metrics` in Prometheus' text format, read from the state at each scrape
 * (so the figures span restarts and every process that writes the state).
 * Loopback by default; every request needs the token and a Host the server
 * was bound to; nothing else is served.
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const host = options.host ?? '127.0.0.1';
  const token = options.token ?? randomBytes(24).toString('base64url');
  const now = options.now ?? Date.now;
  const metrics = new StateMetrics();
  // One scrape at a time: each fills the registry from its own snapshot.
  let scraping: Promise<unknown> = Promise.resolve();
  let guard: Guard | undefined;
  const server = createServer((req, res) => {
    const turn = scraping.then(() => answer(req, res, guard!, () => scrape(metrics, options.statePath, now())));
    scraping = turn.catch(() => {});
  });
  await listen(server, host, options.port ?? 0);
  const port = (server.address() as AddressInfo).port;
  guard = guardFor(token, host, port);
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}/metrics?token=${token}`,
    port,
    token,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}

async function scrape(metrics: StateMetrics, statePath: string, now: number): Promise<string> {
  metrics.fill(readSnapshot(statePath, now));
  return metrics.registry.metrics();
}

async function answer(req: IncomingMessage, res: ServerResponse, guard: Guard, text: () => Promise<string>) {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const plain = { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' };
  const refused = refusal(req, url, guard, false);
  if (refused) return void res.writeHead(403, plain).end(`${refused}\n`);
  if (url.pathname !== '/metrics') return void res.writeHead(404, plain).end('only /metrics is served here\n');
  if (req.method !== 'GET' && req.method !== 'HEAD')
    return void res.writeHead(405, { ...plain, allow: 'GET, HEAD' }).end('GET /metrics\n');
  try {
    const body = await text();
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : body);
  } catch (error) {
    res.writeHead(500, plain).end(`the state could not be read: ${(error as Error).message}\n`);
  }
}
