import { onTestFinished } from 'vitest';
import { startWholeBucket, type WholeBucket } from '../../bench/bucket.mjs';

export type TestBucketServer = Omit<WholeBucket, 'close'>;

/**
 * s3rver (pure Node, from npm) on a loopback port 0 with a bucket `catalog`,
 * storing each PUT whole as S3 does (see bench/bucket.mjs), closed when the
 * test ends.
 */
export async function startTestBucket(): Promise<TestBucketServer> {
  const bucket = await startWholeBucket();
  onTestFinished(() => bucket.close());
  return bucket;
}
