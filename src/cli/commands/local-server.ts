import { EXIT, ExitError, usageError } from '../../library/outcome.js';

/** What review and metrics share as local servers: the address they may bind, and how a failure to listen is said. */

/** A wildcard address has no name a client would send as Host: the Host check would refuse every request. */
export function refuseWildcard(host: string): void {
  if (host === '0.0.0.0' || host === '::' || host === '[::]')
    throw usageError(`--host ${host} listens on every address; give the one address to serve on (default 127.0.0.1)`);
}

/** The port taken or the address not ours is the environment (exit 4), said with what could not start. */
export function listenError(error: unknown, what: string, alsoEnvironment = false): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  if (alsoEnvironment || code === 'EADDRINUSE' || code === 'EADDRNOTAVAIL' || code === 'EACCES')
    return new ExitError(EXIT.environment, `cannot start ${what}: ${(error as Error).message}`, undefined, {
      cause: error,
    });
  return error;
}

/** Said first when the server is reachable from other machines. */
export function exposure(host: string): string[] {
  const loopback = ['127.0.0.1', '::1', 'localhost'].includes(host);
  return loopback
    ? []
    : [
        `warning: ${host} is not loopback: other machines can reach this server over plain HTTP; the token in its URL is all that guards it`,
      ];
}
