import { GenbatchError } from '../util/errors.js';
import { ApiError, ResponseShapeError, TransportError } from './errors.js';

/**
 * How long a start asks a base URL that has never answered as the service
 * (refused, silent, a gateway's page): then it is a wrong URL or a service
 * that is not there, said with exit 4 within 15 s, not waited out for
 * --unreachable-minutes (a scheduler would restart a silent 30 minutes). A
 * simulator started a moment before (`genbatch simulate … &`) is waited for.
 */
export const FIRST_CONTACT_MS = 9_000;

/**
 * The base URL reaches something that is not the service: another web
 * server's page, a plain-HTTP server behind `https://`, or nothing at all
 * since the start. A configuration fault, said in one line with the URL and
 * what came back; `transient` when it may still be the service on its way
 * up (a gateway's 5xx page, a refused connection), asked again for a while.
 */
export class NotTheServiceError extends GenbatchError {
  override readonly name = 'NotTheServiceError';

  constructor(
    readonly baseUrl: string,
    /** What came back: `HTTP 404, text/html`, `TLS: wrong version number`, `ECONNREFUSED`. */
    readonly what: string,
    readonly transient: boolean,
    options?: { cause?: unknown },
  ) {
    super(`${baseUrl} does not answer like the service (${what}): is the base URL right?`, options);
  }
}

/** Connection errors that say the other end speaks no TLS, or not with a certificate this machine trusts. */
const TLS_CODES =
  /^(ERR_SSL_|ERR_TLS_|EPROTO$|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|UNABLE_TO_)/;

/** OpenSSL's reason, out of its long message: "wrong version number". */
function tlsReason(error: TransportError): string {
  const cause = (error.cause as Error | undefined)?.message ?? error.message;
  const reason = /SSL routines:[^:]*:([^:]+)/.exec(cause)?.[1] ?? cause.replace(/\s+/g, ' ').slice(0, 120);
  return /wrong version number|packet length too long|http request/i.test(reason)
    ? `TLS: ${reason}; a plain-HTTP server? try http://`
    : `TLS: ${reason}`;
}

/**
 * A client's first contact with the base URL. Until the service has answered
 * as itself once (its JSON, or its error document), the error of a read that
 * shows another server is turned into NotTheServiceError. Writes are never
 * judged: what a submission's answer means is the policy's.
 */
export class FirstContact {
  private answered = false;

  constructor(private readonly baseUrl: string) {}

  /** The service answered as itself: from now on every error is the service's own. */
  seen(): void {
    this.answered = true;
  }

  /** The error as the caller should see it. `status` and `contentType` are those of the answer a body could not be read from. */
  judge(error: unknown, method: string, answer?: { status: number; contentType: string | undefined }): unknown {
    if (this.answered || method !== 'GET') return error;
    if (error instanceof ApiError) {
      if (error.answer.serviceShaped) {
        this.seen();
        return error;
      }
      const type = error.answer.contentType ? `, ${error.answer.contentType}` : '';
      return new NotTheServiceError(this.baseUrl, `HTTP ${error.status}${type}`, error.status >= 500, { cause: error });
    }
    if (error instanceof ResponseShapeError && answer) {
      const type = answer.contentType ? `, ${answer.contentType}` : '';
      return new NotTheServiceError(this.baseUrl, `HTTP ${answer.status}${type}, not the service's JSON`, false, {
        cause: error,
      });
    }
    if (error instanceof TransportError)
      return TLS_CODES.test(error.code)
        ? new NotTheServiceError(this.baseUrl, tlsReason(error), false, { cause: error })
        : new NotTheServiceError(this.baseUrl, `no answer: ${error.code}`, true, { cause: error });
    return error;
  }
}
