import { bucketLocationOf } from '../manifest/index.js';
import type { BucketClient } from './bucket/bucket-client.js';
import { BucketSink } from './bucket/bucket-sink.js';
import type { Patience } from './bucket/patient-bucket.js';
import { FolderSink } from './folder.js';
import type { OutputSink } from './sink.js';

export interface SinkSettings {
  /** The state file: a bucket's outputs are staged in a folder beside it. */
  statePath: string;
  /** Keep the staged copies once published (--keep-local). */
  keepLocal?: boolean;
  /** A rehearsal starts over in its own place: what an earlier one left in its folder is replaced. */
  simulate?: boolean;
  /** How long a bucket's faults are ridden out (--idle-timeout, --unreachable-minutes). */
  patience: Patience;
  /** Where the bucket's endpoint, region and credentials are read (the SDK's chain); the process's by default. */
  env?: NodeJS.ProcessEnv;
  /** A bucket other than S3 through the SDK (tests). */
  bucketClient?: (bucket: string) => BucketClient;
}

/** The staging folder of a state whose outputs go to a bucket: `<state>.staging` beside it. */
export function stagingDirFor(statePath: string): string {
  return `${statePath.replace(/\.sqlite$/, '')}.staging`;
}

/**
 * The place an out location names: a folder, or a bucket (`s3://…`, its
 * SDK loaded only then: a command that writes to a folder never pays for it).
 */
export async function openOutputSink(location: string, settings: SinkSettings): Promise<OutputSink> {
  const bucket = bucketLocationOf(location);
  if (!bucket) return new FolderSink(location, { replaceStrays: settings.simulate ?? false });
  const { patience } = settings;
  const client =
    settings.bucketClient?.(bucket.bucket) ??
    new (await import('./bucket/s3-bucket-client.js')).S3BucketClient({
      bucket: bucket.bucket,
      idleTimeoutMs: patience.idleTimeoutMs,
      ...(settings.env ? { env: settings.env } : {}),
    });
  const staging = new FolderSink(stagingDirFor(settings.statePath), { replaceStrays: settings.simulate ?? false });
  return new BucketSink(bucket, client, staging, {
    keepLocal: settings.keepLocal ?? false,
    patience,
    statePath: settings.statePath,
  });
}
