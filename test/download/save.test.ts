import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/index.js';
import { openOutput } from '../../src/download/download.js';
import { FolderSink } from '../../src/sink/index.js';

/** A storage link that serves these chunks (and says it serves `length` bytes). */
function serving(chunks: Buffer[], length = chunks.reduce((n, c) => n + c.length, 0)): ApiClient {
  return {
    download: async () => ({
      body: Readable.from(chunks),
      contentLength: length,
      contentType: 'image/png',
      cancel: () => {},
    }),
  } as unknown as ApiClient;
}

/** An image output opened, named by its extension, and saved: as the download task does. */
async function saveOutput(
  client: ApiClient,
  url: string,
  sink: FolderSink,
  nameFor: (ext: string) => { path: string; mode: 'new' | 'replace' },
) {
  const opened = await openOutput(client, url, 'image');
  return opened.saveAs(sink, nameFor(opened.ext));
}

const outDir = () => mkdtempSync(join(tmpdir(), 'genbatch-save-'));

describe('saving an output', () => {
  it('writes every byte of a body bigger than one write, with its size, hash and modification time, and leaves no temporary file', async () => {
    const chunks = Array.from({ length: 40 }, (_, i) => Buffer.alloc(64 * 1024, i));
    const dir = outDir();
    const file = await saveOutput(serving(chunks), 'https://storage.test/o', new FolderSink(dir), (ext) => ({
      path: `shots/a-1.${ext}`,
      mode: 'new',
    }));
    const whole = Buffer.concat(chunks);
    expect(file).toMatchObject({
      path: 'shots/a-1.png',
      bytes: whole.length,
      sha256: createHash('sha256').update(whole).digest('hex'),
      contentType: 'image/png',
    });
    expect(readFileSync(join(dir, 'shots/a-1.png')).equals(whole)).toBe(true);
    expect(file.mtimeMs).toBe(Math.trunc(statSync(join(dir, 'shots/a-1.png')).mtimeMs));
    expect(readdirSync(join(dir, 'shots'))).toEqual(['a-1.png']);
  });

  it('makes a folder again when it was removed after an earlier output was saved in it', async () => {
    const dir = outDir();
    await saveOutput(serving([Buffer.from('first')]), 'https://storage.test/o', new FolderSink(dir), (ext) => ({
      path: `shots/a-1.${ext}`,
      mode: 'new',
    }));
    rmSync(join(dir, 'shots'), { recursive: true });
    await saveOutput(serving([Buffer.from('second')]), 'https://storage.test/o', new FolderSink(dir), (ext) => ({
      path: `shots/b-1.${ext}`,
      mode: 'new',
    }));
    expect(readFileSync(join(dir, 'shots/b-1.png'), 'utf8')).toBe('second');
  });

  it('a body shorter than its Content-Length is refused, and nothing is left under any name', async () => {
    const dir = outDir();
    await expect(
      saveOutput(serving([Buffer.from('only part')], 1000), 'https://storage.test/o', new FolderSink(dir), (ext) => ({
        path: `c-1.${ext}`,
        mode: 'new',
      })),
    ).rejects.toMatchObject({ code: 'CUT_SHORT', refreshable: true });
    expect(readdirSync(dir)).toEqual([]);
  });
});
