import { scrubDeep, scrubSecrets } from '../util/secrets.js';
import { GenbatchError } from '../util/errors.js';

export interface ErrorDetails {
  field?: string;
  allowed?: unknown[];
  required?: number;
  [key: string]: unknown;
}

/** An error answer of the service: HTTP status, `code`, `message`, `details` and the limit headers. */
export class ApiError extends GenbatchError {
  override readonly name = 'ApiError';

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ErrorDetails,
    /** From `Retry-After`; undefined when absent or malformed. */
    readonly retryAfterMs: number | undefined,
    /** From `X-RateLimit-Remaining`. */
    readonly rateLimitRemaining: number | undefined,
    readonly method: string,
    readonly path: string,
    /** What the service said, without the request and the code that `message` leads with: what an item's error shows next to its code. */
    readonly reason: string = message,
    /** How the answer came: its media type, and whether its body was the service's error document (not some other server's page). */
    readonly answer: { contentType?: string | undefined; serviceShaped: boolean } = { serviceShaped: true },
  ) {
    super(message);
  }
}

/** The request never got an answer (reset, refused, timed out). A POST may still have been accepted. */
export class TransportError extends GenbatchError {
  override readonly name = 'TransportError';

  constructor(
    readonly code: string,
    message: string,
    readonly method: string,
    readonly path: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A 2xx answer whose body is not what the spec describes. */
export class ResponseShapeError extends GenbatchError {
  override readonly name = 'ResponseShapeError';

  constructor(
    message: string,
    readonly method: string,
    readonly path: string,
  ) {
    super(message);
  }
}

/** Object storage (presigned upload or output link) refused a request. */
export class StorageError extends GenbatchError {
  override readonly name = 'StorageError';

  constructor(
    readonly status: number,
    readonly storageCode: string | undefined,
    message: string,
    readonly operation: 'upload' | 'download',
  ) {
    super(message);
  }
}

/** `Retry-After` as milliseconds: delta-seconds (fractions tolerated) or an HTTP date. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (!Number.isNaN(date) && /[a-z]/i.test(trimmed)) return Math.max(0, date - now);
  return undefined;
}

function parseNonNegativeInt(value: string | undefined): number | undefined {
  return value !== undefined && /^\s*\d+\s*$/.test(value) ? Number(value) : undefined;
}

interface ErrorResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  bodyText: string;
  method: string;
  path: string;
  secrets: readonly string[];
  now: number;
}

/** The one factory of ApiError: every non-2xx answer of the service goes through here. */
export function apiErrorFrom(res: ErrorResponse): ApiError {
  const header = (name: string) => {
    const v = res.headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  let code = `HTTP_${res.status}`;
  let message = `The service answered HTTP ${res.status}`;
  let details: ErrorDetails = {};
  let serviceShaped = false;
  try {
    const parsed = JSON.parse(res.bodyText) as { error?: { code?: unknown; message?: unknown; details?: unknown } };
    const err = parsed?.error;
    if (err && typeof err.code === 'string') {
      code = err.code;
      serviceShaped = true;
    }
    if (err && typeof err.message === 'string') message = err.message;
    if (err?.details && typeof err.details === 'object' && !Array.isArray(err.details))
      details = err.details as ErrorDetails;
  } catch {
    // Another server's page (HTML) is said in one line.
    if (res.bodyText.trim()) message += `: ${res.bodyText.trim().slice(0, 200).replace(/\s+/g, ' ')}`;
  }
  const field = typeof details.field === 'string' ? ` (field ${details.field})` : '';
  return new ApiError(
    res.status,
    scrubSecrets(code, res.secrets),
    scrubSecrets(`${res.method} ${res.path}: ${code}: ${message}${field}`, res.secrets),
    scrubDeep(details, res.secrets),
    parseRetryAfter(header('retry-after'), res.now),
    parseNonNegativeInt(header('x-ratelimit-remaining')),
    res.method,
    res.path,
    scrubSecrets(`${message}${field}`, res.secrets),
    { contentType: header('content-type')?.split(';')[0]?.trim(), serviceShaped },
  );
}
