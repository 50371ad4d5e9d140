import { createHash } from 'node:crypto';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
// s3rver has no types of its own: only its constructor, run, close, events and store (below) are used.
// @ts-expect-error
import S3rver from 's3rver';
import { onTestFinished } from 'vitest';

export interface TestBucketServer {
  /** The environment the AWS SDK reads: endpoint, region, credentials (s3rver's own pair). */
  env: Record<string, string>;
  /** Keys of the objects created, in order (one per PUT or completed multipart upload). */
  created: string[];
  /** Called with each key as it is created. */
  onCreated(listener: (key: string) => void): void;
  /** Called with each key as the store starts to take its body (a PUT, or a multipart upload's completion). */
  onPutBegun(listener: (key: string) => void): void;
  /** Once every PUT begun has stored its object or failed. */
  putsSettled(): Promise<void>;
}

interface StoredBody {
  bucket: string;
  key: string;
  content: Readable | Buffer;
  metadata: Record<string, string>;
}

/** s3rver's filesystem store, as far as it is replaced here. */
interface Store {
  putObject(object: StoredBody): Promise<{ size: number; md5: string }>;
  getResourcePath(bucket: string, key: string, resource: string): string;
  putMetadata(bucket: string, key: string, metadata: Record<string, string>, md5: string): Promise<void>;
}

/**
 * S3 stores an object all at once, when its whole body has arrived. s3rver
 * writes it in place as the body streams, so a body cut off (a run killed
 * mid-upload) leaves a partial object with no metadata under the name, and
 * a request that never ends; and it answers a PUT before the file is fully
 * written. Here each body is written whole beside the object, its metadata
 * next, then it is renamed into place: the object appears whole or not at
 * all, as in S3. Also counts the PUTs under way, for a test to wait on.
 */
function keepPutsWhole(store: Store, begun: ((key: string) => void)[]): () => Promise<void> {
  let underWay = 0;
  let written = 0;
  const waiters: (() => void)[] = [];
  store.putObject = async (object) => {
    underWay++;
    for (const l of begun) l(object.key);
    try {
      const path = store.getResourcePath(object.bucket, object.key, 'object');
      const partial = `${path}.${++written}.partial`;
      await mkdir(dirname(path), { recursive: true });
      const hash = createHash('md5');
      let size = 0;
      const body = Buffer.isBuffer(object.content) ? Readable.from([object.content]) : object.content;
      try {
        await pipeline(
          body,
          async function* (chunks: AsyncIterable<Buffer>) {
            for await (const chunk of chunks) {
              hash.update(chunk);
              size += chunk.length;
              yield chunk;
            }
          },
          createWriteStream(partial),
        );
      } catch (error) {
        await rm(partial, { force: true });
        throw error;
      }
      const md5 = hash.digest('hex');
      await store.putMetadata(object.bucket, object.key, object.metadata, md5);
      await rename(partial, path);
      return { size, md5 };
    } finally {
      underWay--;
      if (underWay === 0) for (const w of waiters.splice(0)) w();
    }
  };
  return () => (underWay === 0 ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve)));
}

/** s3rver (pure Node, from npm) on a loopback port 0 with a bucket `catalog`, closed when the test ends. */
export async function startTestBucket(): Promise<TestBucketServer> {
  const directory = mkdtempSync(join(tmpdir(), 'genbatch-s3-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory,
    configureBuckets: [{ name: 'catalog' }],
  });
  const begun: ((key: string) => void)[] = [];
  const putsSettled = keepPutsWhole(server.store as Store, begun);
  const { port } = (await server.run()) as { port: number };
  const created: string[] = [];
  const listeners: ((key: string) => void)[] = [];
  server.on('event', (event: { Records: { eventName: string; s3: { object: { key: string } } }[] }) => {
    for (const r of event.Records) {
      if (!r.eventName.startsWith('ObjectCreated')) continue;
      const key = decodeURIComponent(r.s3.object.key);
      created.push(key);
      for (const l of listeners) l(key);
    }
  });
  onTestFinished(async () => {
    await server.close();
    rmSync(directory, { recursive: true, force: true });
  });
  return {
    env: {
      AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    },
    created,
    onCreated: (l) => listeners.push(l),
    onPutBegun: (l) => begun.push(l),
    putsSettled,
  };
}
