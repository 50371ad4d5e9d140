import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** The header a write carries the token in: never the URL, which a page can be tricked into loading. */
export const TOKEN_HEADER = 'x-genbatch-token';

/** Who may talk to a local server (review, metrics): the token in its URL, at the address it is bound to. */
export interface Guard {
  token: string;
  /** Host headers accepted: the bound address and port (and localhost's names, when bound to loopback). */
  hosts: ReadonlySet<string>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

export function guardFor(token: string, host: string, port: number): Guard {
  const names = LOOPBACK.has(host) ? ['127.0.0.1', 'localhost', '[::1]'] : [host.includes(':') ? `[${host}]` : host];
  return { token, hosts: new Set(names.map((name) => `${name}:${port}`)) };
}

/**
 * Why a request is refused (403), or undefined. A foreign Host header is a
 * page elsewhere reaching us through DNS rebinding; a token is needed on
 * every request, and a write must carry it in a header (which no other
 * origin can set without CORS, and we allow none) and come from our origin.
 */
export function refusal(req: IncomingMessage, url: URL, guard: Guard, write: boolean): string | undefined {
  const host = req.headers.host ?? '';
  if (!guard.hosts.has(host.toLowerCase())) return 'this server answers only at the address it printed';
  const header = req.headers[TOKEN_HEADER];
  // A scraper (Prometheus) sends it as a bearer token: a header, as safe as ours.
  const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  const inHeader = typeof header === 'string' ? header : bearer;
  const given = inHeader ?? (write ? undefined : (url.searchParams.get('token') ?? undefined));
  if (given === undefined || !sameToken(given, guard.token))
    return write ? `a write needs the token in the ${TOKEN_HEADER} header` : 'the token is missing or wrong';
  const origin = req.headers.origin;
  if (write && origin !== undefined && origin !== `http://${host}`) return 'a write must come from this page';
  return undefined;
}

function sameToken(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}
