import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// s3rver has no types of its own: only its constructor, run, close and events are used.
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
  };
}
