import type { Dispatcher, Agent as UndiciAgent } from 'undici';
// undici's index also loads its web layer (fetch, WebSocket, cookies, caches, mocks)
// and, through it, Node's own bundled undici: about 80 ms of every start, before the
// first submission. The client needs the agent and `request` only, which undici
// keeps in these files (the package has no export map; the lock pins the version).
// Imported, not required, so that the bin's bundle holds them (undici-parts.d.ts types them).
import UndiciAgentClass from 'undici/lib/dispatcher/agent.js';
import requestOn from 'undici/lib/api/api-request.js';

export const Agent = UndiciAgentClass;
export type Agent = UndiciAgent;

/** One keep-alive pool per origin: the client's unless a test gives its own. */
export function createDispatcher(): Agent {
  return new Agent({
    keepAliveTimeout: 10_000,
    keepAliveMaxTimeout: 60_000,
    connections: 32,
    connect: { timeout: 10_000 },
  });
}

export type RequestOptions = Omit<Dispatcher.RequestOptions, 'origin' | 'path'>;

/** undici's `request(url, { dispatcher })`, without its index. */
export function request(
  dispatcher: Dispatcher,
  url: string,
  options: RequestOptions,
): Promise<Dispatcher.ResponseData> {
  const target = new URL(url);
  return requestOn.call(dispatcher, { ...options, origin: target.origin, path: `${target.pathname}${target.search}` });
}
