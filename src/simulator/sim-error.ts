import { GenbatchError } from '../util/errors.js';
/** An error the simulated service answers with: `{ error: { code, message, details? } }`. */
export class SimError extends GenbatchError {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  body(): { error: { code: string; message: string; details?: Record<string, unknown> } } {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) } };
  }
}

export function invalid(field: string, message: string, allowed?: readonly unknown[]): SimError {
  return new SimError(400, 'VALIDATION_ERROR', message, { field, ...(allowed ? { allowed: [...allowed] } : {}) });
}

/** Integer seconds, at least 1, as the spec's `Retry-After` header carries them. */
export function retryAfterSeconds(ms: number): string {
  return String(Math.max(1, Math.ceil(ms / 1000)));
}

export function limited(code: string, message: string, retryAfterMs: number, remaining: number): SimError {
  return new SimError(429, code, message, undefined, {
    'Retry-After': retryAfterSeconds(retryAfterMs),
    'X-RateLimit-Remaining': String(Math.max(0, remaining)),
  });
}
