import type { Dispatcher } from 'undici';
import { scrubSecrets } from '../util/secrets.js';
import { TransportError } from './errors.js';

/** The key's limit a request counts against: submissions, reads, or upload grants. */
export type LimitKind = 'submit' | 'read' | 'upload';

/** The service answered a request (any HTTP status): it is reachable, and its limit headers say what is left. */
export interface ApiAnswer {
  kind: 'answer';
  method: string;
  /** The path under the base URL's path, without the host. */
  path: string;
  limit: LimitKind;
  status: number;
  /** From request to the answer's body read. */
  ms: number;
  /** The error's code, on an error answer. */
  code?: string;
  /** `Retry-After`, on an error answer that carried one. */
  retryAfterMs?: number;
  /** `X-RateLimit-Remaining`, when the answer carried it. */
  remaining?: number;
}

export function limitOf(method: string, path: string): LimitKind {
  if (method === 'GET') return 'read';
  return path.startsWith('/uploads') ? 'upload' : 'submit';
}

export function transportError(error: unknown, method: string, where: string, secrets: string[]): TransportError {
  const code = (error as { code?: unknown }).code;
  // One line: OpenSSL's reasons end in a newline, and a user reads this in one.
  const reason = scrubSecrets(error instanceof Error ? error.message : String(error), secrets)
    .replace(/\s+/g, ' ')
    .trim();
  return new TransportError(
    typeof code === 'string' ? code : 'NETWORK_ERROR',
    `${method} ${where}: no answer (${typeof code === 'string' ? code : 'network error'}: ${reason})`,
    method,
    where,
    { cause: error },
  );
}

/** An answer as its listeners hear it, before its body is read (`ms` is set then). */
export function answerOf(method: string, path: string, res: Dispatcher.ResponseData): ApiAnswer {
  const answer: ApiAnswer = {
    kind: 'answer',
    method,
    path,
    limit: limitOf(method, path),
    status: res.statusCode,
    ms: 0,
  };
  const remaining = Number(header(res.headers, 'x-ratelimit-remaining') ?? NaN);
  if (Number.isInteger(remaining) && remaining >= 0) answer.remaining = remaining;
  return answer;
}

export function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}
