import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';

/** Writes a file whole or not at all: a temporary file beside it, then a rename. */
export async function writeFileAtomic(path: string, data: string | Uint8Array | Iterable<string>): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.tmp`;
  const out = createWriteStream(temp);
  try {
    // Chunk by chunk with backpressure: a 100,000-item report never sits in memory whole.
    for (const chunk of typeof data === 'string' || data instanceof Uint8Array ? [data] : data) {
      if (!out.write(chunk)) await Promise.race([once(out, 'drain'), once(out, 'error').then(([e]) => Promise.reject(e))]);
    }
    out.end();
    await once(out, 'finish');
    await rename(temp, path);
  } catch (error) {
    out.destroy();
    await rm(temp, { force: true });
    throw error;
  }
}
