import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { ByteRange } from '../sink.js';
import { classify } from './bucket-policy.js';
import type { ObjectSource, BucketClient, BucketCall, BucketObject } from './bucket-client.js';

/** Files up to this size go in one PUT with Content-MD5 (the bucket checks the bytes); larger ones in parts. */
const SINGLE_PUT_MAX = 16 * 1024 * 1024;
/** Parts of a multipart upload (S3's smallest), and how many at once: what a video holds in memory (10 MiB; four at once, 40). */
const PART_SIZE = 5 * 1024 * 1024;
const PARTS_AT_ONCE = 2;
/** The user-defined metadata that carries an object's sha256 (`x-amz-meta-sha256`): a multipart ETag is no digest. */
const SHA256_META = 'sha256';
const NO_WARNING = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';

export interface S3StoreOptions {
  bucket: string;
  /** No byte for this long on a request's socket: it is given up (and tried again by the caller). */
  idleTimeoutMs: number;
  /** The environment the SDK's chain reads (endpoint, region, credentials, profile). */
  env?: NodeJS.ProcessEnv;
}

/**
 * A bucket through the AWS SDK, configured for S3-compatible stores: the
 * endpoint, region and credentials from the SDK's standard chain;
 * path-style addressing with a custom endpoint (MinIO, R2, a local server);
 * checksums only where an operation requires them (stores that reject the
 * SDK's default CRC32 trailers: R2, MinIO); one attempt per call, the
 * caller backs off (it counts how long the bucket has not answered).
 */
export class S3BucketClient implements BucketClient {
  readonly bucket: string;
  private readonly client: S3Client;

  constructor(options: S3StoreOptions) {
    this.bucket = options.bucket;
    this.client = createClient(clientConfig(options.env ?? process.env, options.idleTimeoutMs));
  }

  async head(key: string, call: BucketCall = {}): Promise<BucketObject | undefined> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }), {
        abortSignal: call.signal,
      });
      return { size: head.ContentLength ?? 0, sha256: head.Metadata?.[SHA256_META] };
    } catch (error) {
      if (statusOf(error) === 404 && nameOf(error) !== 'NoSuchBucket') return undefined;
      throw classify(error, `HEAD s3://${this.bucket}/${key}`);
    }
  }

  async putNew(key: string, source: ObjectSource, call: BucketCall = {}): Promise<'created' | 'exists'> {
    // Create-only where the bucket supports it (S3, R2, MinIO); the caller has looked first for those that do not.
    const params = { Metadata: { [SHA256_META]: source.sha256 }, IfNoneMatch: '*' };
    try {
      await this.put(key, source, params, call);
      return 'created';
    } catch (error) {
      if (statusOf(error) === 412 || nameOf(error) === 'PreconditionFailed') return 'exists';
      throw classify(error, `PUT s3://${this.bucket}/${key}`);
    }
  }

  async putReplace(key: string, source: Omit<ObjectSource, 'sha256'>, call: BucketCall = {}): Promise<void> {
    try {
      await this.put(key, source, {}, call);
    } catch (error) {
      throw classify(error, `PUT s3://${this.bucket}/${key}`);
    }
  }

  /**
   * One PUT with Content-MD5 up to SINGLE_PUT_MAX, else a multipart upload.
   * Every request carries the call's signal: lib-storage's own abort() only
   * stops waiting, and leaves its request on the wire (a silent bucket's
   * socket then held the process open after the run had ended).
   */
  private async put(
    key: string,
    source: Omit<ObjectSource, 'sha256'>,
    extra: { Metadata?: Record<string, string>; IfNoneMatch?: string },
    call: BucketCall,
  ): Promise<void> {
    const params = { Bucket: this.bucket, Key: key, ContentType: source.contentType, ...extra };
    const body = { Body: bodyOf(source.path, call.progress), ContentLength: source.bytes };
    if (source.bytes <= SINGLE_PUT_MAX) {
      const md5 = await md5Of(source.path);
      await this.client.send(new PutObjectCommand({ ...params, ...body, ContentMD5: md5 }), {
        abortSignal: call.signal,
      });
      return;
    }
    const upload = new Upload({
      client: sendingWith(this.client, call.signal),
      params: { ...params, ...body },
      partSize: PART_SIZE,
      queueSize: PARTS_AT_ONCE,
      leavePartsOnError: false,
    });
    await uploadWithin(upload, call.signal);
  }

  async get(
    key: string,
    range?: ByteRange,
    call: BucketCall = {},
  ): Promise<{ size: number; body: Readable } | undefined> {
    try {
      const got = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: key,
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
        { abortSignal: call.signal },
      );
      const total = /\/(\d+)$/.exec(got.ContentRange ?? '')?.[1];
      return { size: total ? Number(total) : (got.ContentLength ?? 0), body: got.Body as Readable };
    } catch (error) {
      if (statusOf(error) === 404 && nameOf(error) !== 'NoSuchBucket') return undefined;
      throw classify(error, `GET s3://${this.bucket}/${key}`);
    }
  }

  /** The SDK's sockets let go: a process that ends its run holds none of them open. */
  close(): void {
    this.client.destroy();
  }

  async delete(key: string, call: BucketCall = {}): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal: call.signal });
    } catch (error) {
      throw classify(error, `DELETE s3://${this.bucket}/${key}`);
    }
  }
}

const quiet = () => undefined;
const SILENT = { trace: quiet, debug: quiet, info: quiet, warn: quiet, error: quiet };

/** The SDK's config from the environment: a custom endpoint means path-style, and a region is then optional. */
export function clientConfig(env: NodeJS.ProcessEnv, idleTimeoutMs: number): S3ClientConfig {
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION || (endpoint ? 'us-east-1' : undefined);
  // Keys given in this environment are used as given; otherwise the SDK's chain finds them (a profile, SSO, a role).
  const keys = env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY;
  return {
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    ...(region ? { region } : {}),
    ...(env.AWS_PROFILE ? { profile: env.AWS_PROFILE } : {}),
    ...(keys
      ? {
          credentials: {
            accessKeyId: env.AWS_ACCESS_KEY_ID!,
            secretAccessKey: env.AWS_SECRET_ACCESS_KEY!,
            ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
          },
        }
      : {}),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 1,
    requestHandler: { connectionTimeout: Math.min(idleTimeoutMs, 10_000), requestTimeout: idleTimeoutMs },
    // Without a logger of its own the SDK writes to the console ("An error was encountered in a non-retryable
    // streaming request." on a failed PUT): every fault is genbatch's to say, through its policy and its log.
    logger: SILENT,
  };
}

/**
 * The SDK warns, once per process, that its releases after January 2027 will
 * need Node 22: a note to genbatch's developers (who pin the version), not
 * to its users. Its documented switch is set for the construction only, so
 * the user's own environment is left as it was.
 */
function createClient(config: S3ClientConfig): S3Client {
  const before = process.env[NO_WARNING];
  process.env[NO_WARNING] = 'true';
  try {
    return new S3Client(config);
  } finally {
    if (before === undefined) delete process.env[NO_WARNING];
    else process.env[NO_WARNING] = before;
  }
}

/** The client as an Upload sees it, every request it sends carrying `signal` (an abort ends each on the wire). */
function sendingWith(client: S3Client, signal: AbortSignal | undefined): S3Client {
  if (!signal) return client;
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property !== 'send') return Reflect.get(target, property, receiver);
      return (command: Parameters<S3Client['send']>[0], options?: { abortSignal?: AbortSignal }) =>
        target.send(command, { ...options, abortSignal: signal });
    },
  });
}

/** A multipart upload that an abort of `signal` (an interrupt) ends, its listener gone once it is done. */
async function uploadWithin(upload: Upload, signal: AbortSignal | undefined): Promise<void> {
  const abort = () => void upload.abort();
  signal?.addEventListener('abort', abort, { once: true });
  try {
    await upload.done();
  } finally {
    signal?.removeEventListener('abort', abort);
  }
}

/** The file as a request body, ticking `progress` as the request takes each chunk (a socket that takes none is silent). */
function bodyOf(path: string, progress: (() => void) | undefined): Readable {
  const file = createReadStream(path);
  if (!progress) return file;
  const counted = new Transform({
    transform(chunk, _encoding, done) {
      progress();
      done(null, chunk);
    },
  });
  file.on('error', (error) => counted.destroy(error));
  return file.pipe(counted);
}

async function md5Of(path: string): Promise<string> {
  const hash = createHash('md5');
  await pipeline(createReadStream(path), hash);
  return hash.digest('base64');
}

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

function nameOf(error: unknown): string {
  const e = error as { name?: string; Code?: string; code?: string };
  return e.Code ?? e.name ?? e.code ?? 'Error';
}
