import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';

/** Writes a file whole or not at all: chunk by chunk with backpressure (a 100,000-item report never sits in memory whole), then a rename. */
export async function writeFileAtomic(path: string, data: string | Uint8Array | Iterable<string>): Promise<void> {
  const file = await AtomicFile.open(path);
  try {
    for (const chunk of typeof data === 'string' || data instanceof Uint8Array ? [data] : data) await file.write(chunk);
    await file.commit();
  } catch (error) {
    await file.abort();
    throw error;
  }
}

/**
 * A file written piece by piece and put in place whole at commit (a temporary
 * file beside it, then a rename), so several files can be filled in one pass.
 */
export class AtomicFile {
  private failure: Error | undefined;

  private constructor(
    readonly path: string,
    private readonly temp: string,
    private readonly stream: WriteStream,
  ) {
    // Kept for the next write or the commit to throw: an 'error' with no listener would end the process.
    stream.on('error', (error) => (this.failure ??= error));
  }

  static async open(path: string): Promise<AtomicFile> {
    await mkdir(dirname(path), { recursive: true });
    const temp = `${path}.${process.pid}.tmp`;
    const stream = createWriteStream(temp);
    await once(stream, 'open');
    return new AtomicFile(path, temp, stream);
  }

  /** Resolves when the stream can take more (backpressure), or rejects with its error. */
  async write(chunk: string | Uint8Array): Promise<void> {
    if (this.failure) throw this.failure;
    if (!this.stream.write(chunk)) await once(this.stream, 'drain');
  }

  async commit(): Promise<void> {
    if (this.failure) throw this.failure;
    await new Promise<void>((resolve, reject) =>
      this.stream.end((error?: Error | null) => (error ? reject(error) : resolve())),
    );
    await rename(this.temp, this.path);
  }

  async abort(): Promise<void> {
    this.stream.destroy();
    await rm(this.temp, { force: true });
  }
}
