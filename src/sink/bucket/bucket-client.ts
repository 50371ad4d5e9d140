import type { Readable } from 'node:stream';
import { GenbatchError } from '../../util/errors.js';
import type { ByteRange } from '../sink.js';

/** An object as the bucket describes it: its size, and the sha256 genbatch stored with it (if any). */
export interface BucketObject {
  size: number;
  sha256: string | undefined;
}

/** A local file to put whole under a key, with what it must hold once there. */
export interface ObjectSource {
  /** The file on this machine. */
  path: string;
  bytes: number;
  sha256: string;
  contentType: string;
}

/** How one call is made: what ends it (an interrupt, or the idle clock), and a tick for each stretch of bytes that moves. */
export interface BucketCall {
  signal?: AbortSignal | undefined;
  /** Bytes of a body moved (sent or taken): the request is not silent. */
  progress?: (() => void) | undefined;
}

/**
 * The few operations genbatch asks of an S3-compatible bucket, keys being
 * full object keys. One implementation speaks S3 through the AWS SDK; tests
 * give fakes that slow down, go silent or refuse. Each is one attempt: the
 * PatientBucket in front of it rides out the bucket's faults.
 */
export interface BucketClient {
  readonly bucket: string;
  /** The object under `key`, or undefined when there is none. */
  head(key: string, call?: BucketCall): Promise<BucketObject | undefined>;
  /**
   * Puts the file under `key` only where no object is ('created'); 'exists'
   * when the bucket says one is there (If-None-Match). A bucket that ignores
   * the condition overwrites: callers look first (head).
   */
  putNew(key: string, source: ObjectSource, call?: BucketCall): Promise<'created' | 'exists'>;
  /** Puts (or replaces) a small object: the results, the gallery, the owner marker. */
  putReplace(key: string, source: Omit<ObjectSource, 'sha256'>, call?: BucketCall): Promise<void>;
  /** The object's bytes (all, or a range), or undefined when there is none. */
  get(key: string, range?: ByteRange, call?: BucketCall): Promise<{ size: number; body: Readable } | undefined>;
  delete(key: string, call?: BucketCall): Promise<void>;
  /** Lets go of what it holds (its connections); no call is made after. */
  close(): void;
}

/**
 * How a bucket refused, as genbatch acts on it:
 * - `slow-down`: it answered "not now" (503 SlowDown, other 5xx, 429): back off and try again;
 * - `unreachable`: nothing answered (refused, reset, timed out): waited out like the service;
 * - `denied`: the credentials may not do it (403, a bad key, a wrong signature): a person must act;
 * - `no-bucket`: the bucket does not exist;
 * - `failed`: anything else about this one object.
 */
export type BucketFault = 'slow-down' | 'unreachable' | 'denied' | 'no-bucket' | 'failed';

export class BucketError extends GenbatchError {
  constructor(
    message: string,
    readonly fault: BucketFault,
    /** The store's own code (SlowDown, AccessDenied, ECONNREFUSED, …). */
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
