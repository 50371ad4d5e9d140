import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** Writes a file whole or not at all: a temporary file beside it, then a rename. */
export async function writeFileAtomic(path: string, data: string | Uint8Array | Iterable<string> | AsyncIterable<string>): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.tmp`;
  try {
    // Chunk by chunk with backpressure (a 100,000-item report never sits in memory whole);
    // pipeline also waits for the file to be written and closes it on an error.
    const chunks = typeof data === 'string' || data instanceof Uint8Array ? [data] : data;
    await pipeline(Readable.from(chunks), createWriteStream(temp));
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}
