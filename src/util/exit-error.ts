import { GenbatchError } from './errors.js';
/** The exit codes of the product contract, and an error that already carries its own: the core throws it where the code is known (a usage error, the environment), the CLI prints it. */
export const EXIT = { ok: 0, incomplete: 1, usage: 2, stopped: 3, environment: 4, interrupted: 130 } as const;

/** An error that already knows its exit code and what to tell the user. */
export class ExitError extends GenbatchError {
  constructor(
    readonly exitCode: number,
    message: string,
    /** A --json result that still belongs on stdout (the issues of an invalid manifest). */
    readonly stdout?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export const usageError = (message: string) => new ExitError(EXIT.usage, message);
