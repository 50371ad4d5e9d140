import type { Readable } from 'node:stream';
import { scrubSecrets } from '../util/secrets.js';
import { StorageError } from './errors.js';

/** Aborts when the bytes it watches stop moving for `idleTimeoutMs`: storage that stopped reading an upload. */
export class IdleWatch {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly idleTimeoutMs: number) {
    this.arm();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  async *watch(source: Readable): AsyncGenerator<Buffer> {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      this.arm();
      yield chunk;
    }
    // The whole body is out: the answer's wait is the headers timeout's.
    this.stop();
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  private arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.controller.abort(), this.idleTimeoutMs);
    this.timer.unref();
  }
}

/** Origin and path only: presigned query strings are credentials of their own. */
export function describeStorageUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

export function storageError(
  status: number,
  body: string,
  what: string,
  operation: 'upload' | 'download',
  secrets: string[],
): StorageError {
  const code = /<Code>([^<]{1,100})<\/Code>/.exec(body)?.[1];
  const message = /<Message>([^<]{1,300})<\/Message>/.exec(body)?.[1] ?? body.trim().slice(0, 200);
  return new StorageError(
    status,
    code,
    scrubSecrets(
      `${what}: storage answered HTTP ${status}${code ? ` ${code}` : ''}${message ? `: ${message}` : ''}`,
      secrets,
    ),
    operation,
  );
}
