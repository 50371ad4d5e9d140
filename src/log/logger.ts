import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import { REDACTED, scrubSecrets } from '../util/secrets.js';

export type Logger = PinoLogger;

export interface LoggerOptions {
  level?: string;
  /** Where JSON lines go; stderr by default. */
  destination?: DestinationStream | NodeJS.WritableStream;
  /** Strings that must never appear in a line (the API key). */
  secrets: readonly string[];
}

/**
 * pino, with the key removed twice: known header paths are redacted, and every
 * finished line is scrubbed of the secret wherever it appears (error messages,
 * echoed server text, URLs), whatever shape the logged object had.
 */
export function createLogger(options: LoggerOptions): Logger {
  const out = options.destination ?? process.stderr;
  const secrets = options.secrets.flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]);
  const scrubbing: DestinationStream = {
    write(line: string) {
      out.write(scrubSecrets(line, secrets));
    },
  };
  return pino(
    {
      level: options.level ?? 'info',
      redact: {
        paths: [
          'apiKey',
          '*.apiKey',
          'authorization',
          '*.authorization',
          'headers.authorization',
          '*.headers.authorization',
        ],
        censor: REDACTED,
      },
    },
    scrubbing,
  );
}
