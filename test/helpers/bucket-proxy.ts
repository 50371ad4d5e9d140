import { onTestFinished } from 'vitest';
import { startFaultProxy, type FaultProxy } from '../../bench/bucket.mjs';

export type { FaultProxy } from '../../bench/bucket.mjs';

/** The fault proxy of bench/bucket.mjs in front of a test bucket, closed when the test ends. */
export async function startBucketProxy(bucketEnv: Record<string, string>): Promise<FaultProxy> {
  const proxy = await startFaultProxy(bucketEnv);
  onTestFinished(() => proxy.close());
  return proxy;
}
