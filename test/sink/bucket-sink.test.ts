import { DEFAULT_PATIENCE } from '../../src/options/flags.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bucketLocationOf, resolveOutDir } from '../../src/manifest/index.js';
import { clientConfig } from '../../src/sink/bucket/s3-bucket-client.js';
import { bucketProblem, classify as asStoreError } from '../../src/sink/bucket/bucket-policy.js';
import { BucketSink, FolderSink } from '../../src/sink/index.js';
import { FakeBucket } from '../helpers/fake-bucket.js';

/** An error shaped as the AWS SDK throws them: a name, an HTTP status in $metadata, a code for a socket's. */
function sdkError(name: string, status?: number, code?: string): Error {
  return Object.assign(new Error(`${name} said`), {
    name,
    ...(code ? { code } : {}),
    $metadata: { httpStatusCode: status },
  });
}

describe('a bucket as an out location', () => {
  it('is s3://BUCKET/PREFIX: the prefix without its slashes, a bucket by S3 naming rules, no . or .. parts', () => {
    expect(bucketLocationOf('s3://catalog/spring/2026/')).toEqual({ bucket: 'catalog', prefix: 'spring/2026' });
    expect(bucketLocationOf('s3://catalog')).toEqual({ bucket: 'catalog', prefix: '' });
    expect(bucketLocationOf('s3://Catalog/x')).toBeUndefined();
    expect(bucketLocationOf('s3://catalog/../x')).toBeUndefined();
    expect(bucketLocationOf('/tmp/out')).toBeUndefined();
    expect(resolveOutDir('/work', 's3://catalog//spring/')).toBe('s3://catalog/spring');
    expect(resolveOutDir('/work', 'out/m')).toBe('/work/out/m');
  });

  it("reads the SDK's environment: a custom endpoint is path-style, checksums only where required, keys as given", () => {
    const config = clientConfig(
      { AWS_ENDPOINT_URL: 'http://127.0.0.1:9000', AWS_ACCESS_KEY_ID: 'id', AWS_SECRET_ACCESS_KEY: 'secret' },
      5_000,
    );
    expect(config).toMatchObject({
      endpoint: 'http://127.0.0.1:9000',
      forcePathStyle: true,
      region: 'us-east-1',
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 1,
      credentials: { accessKeyId: 'id', secretAccessKey: 'secret' },
      requestHandler: { requestTimeout: 5_000 },
    });
    // AWS itself: virtual-hosted addressing, the region and the keys from the SDK's own chain (profile, SSO, a role).
    const aws = clientConfig({ AWS_PROFILE: 'catalog' }, 5_000);
    expect(aws).toMatchObject({ profile: 'catalog' });
    expect(aws).not.toHaveProperty('forcePathStyle');
    expect(aws).not.toHaveProperty('credentials');
  });

  it("tells a bucket's answers apart as the run acts on them", () => {
    expect(asStoreError(sdkError('SlowDown', 503), 'PUT').fault).toBe('slow-down');
    expect(asStoreError(sdkError('InternalError', 500), 'PUT').fault).toBe('slow-down');
    expect(asStoreError(sdkError('Error', undefined, 'ECONNREFUSED'), 'PUT').fault).toBe('unreachable');
    expect(asStoreError(sdkError('TimeoutError'), 'PUT').fault).toBe('unreachable');
    expect(asStoreError(sdkError('SignatureDoesNotMatch', 403), 'PUT').fault).toBe('denied');
    expect(asStoreError(sdkError('InvalidAccessKeyId', 403), 'PUT').fault).toBe('denied');
    expect(asStoreError(sdkError('NoSuchBucket', 404), 'PUT').fault).toBe('no-bucket');
    expect(asStoreError(sdkError('EntityTooLarge', 400), 'PUT').fault).toBe('failed');
    // Nothing reached the bucket and waiting will not mend it: a person must act.
    expect(asStoreError(new Error('Region is missing'), 'PUT').fault).toBe('denied');
  });

  it('says a missing region or missing credentials first, as what to set, not as a refusal', () => {
    const region = bucketProblem('s3://b/p', asStoreError(new Error('Region is missing'), 'PUT s3://b/p/x'));
    expect(region).toEqual({
      code: 'NO_REGION',
      message: expect.stringMatching(/^cannot write to s3:\/\/b\/p \(NO_REGION\): no region is set: set AWS_REGION/),
    });
    const none = Object.assign(new Error('Could not load credentials from any providers'), {
      name: 'CredentialsProviderError',
    });
    expect(bucketProblem('s3://b/p', asStoreError(none, 'PUT')).message).toMatch(
      /\(NO_CREDENTIALS\): no credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/,
    );
    // A bucket that refuses the credentials it was given is still said as a refusal.
    expect(bucketProblem('s3://b/p', asStoreError(sdkError('InvalidAccessKeyId', 403), 'PUT')).message).toMatch(
      /the credentials may not write there/,
    );
  });

  it('is proven writable before anything is paid: a refused signature or a missing bucket is said with the bucket and what to do', async () => {
    const staging = new FolderSink(mkdtempSync(join(tmpdir(), 'genbatch-staging-')));
    const bucket = new FakeBucket();
    const sink = new BucketSink({ bucket: 'catalog', prefix: 'spring' }, bucket, staging, {
      keepLocal: false,
      patience: DEFAULT_PATIENCE,
    });
    expect(await sink.probe()).toBeUndefined();
    expect([...bucket.objects.keys()]).toEqual([]);
    bucket.fault = (op) => (op === 'putReplace' ? { fault: 'denied', code: 'SignatureDoesNotMatch' } : undefined);
    expect(await sink.probe()).toEqual({
      code: 'SignatureDoesNotMatch',
      message: expect.stringMatching(
        /^cannot write to s3:\/\/catalog\/spring \(SignatureDoesNotMatch\): the credentials may not write there/,
      ),
    });
    bucket.fault = () => ({ fault: 'no-bucket', code: 'NoSuchBucket' });
    expect((await sink.probe())?.message).toMatch(/the bucket does not exist: create it, or give another --out/);
  });

  it('calls an unpublished output whose local copy is gone lost only when the bucket says it has none, never when it cannot be asked', async () => {
    const staging = new FolderSink(mkdtempSync(join(tmpdir(), 'genbatch-staging-')));
    const bucket = new FakeBucket();
    const patience = { idleTimeoutMs: 100, unreachableMs: 300, backoff: { firstMs: 5, longestMs: 50 } };
    const sink = new BucketSink({ bucket: 'catalog', prefix: 'spring' }, bucket, staging, {
      keepLocal: false,
      patience,
    });
    const recorded = { path: 'a-1.png', bytes: 3, sha256: 'f'.repeat(64), mtime_ms: 1, published: false };
    // Not staged, not in the bucket: lost, downloaded again.
    expect((await sink.check(recorded)).verdict).toBe('missing');
    // The bucket gives up (past --unreachable-minutes): no evidence either way, so nothing is downloaded again on a guess.
    bucket.fault = () => ({ fault: 'unreachable', code: 'ECONNREFUSED' });
    expect((await sink.check(recorded)).verdict).toBe('unchanged');
    // In the bucket with the bytes recorded: published by a run killed before it recorded so.
    bucket.fault = () => undefined;
    bucket.objects.set('spring/a-1.png', {
      bytes: Buffer.from('png'),
      sha256: 'f'.repeat(64),
      contentType: 'image/png',
    });
    expect((await sink.check(recorded)).verdict).toBe('unchanged');
  });
});
