// Types of bucket.mjs for the suite, whose test bucket and fault proxy it is.
import type { Readable } from 'node:stream';

export interface WholeBucket {
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
  /** How many connections are open to it now. */
  connections(): Promise<number>;
  close(): Promise<void>;
}

/** s3rver's filesystem store, as far as keepPutsWhole replaces it. */
export interface S3rverStore {
  putObject(object: {
    bucket: string;
    key: string;
    content: Readable | Buffer;
    metadata: Record<string, string>;
  }): Promise<{ size: number; md5: string }>;
  getResourcePath(bucket: string, key: string, resource: string): string;
  putMetadata(bucket: string, key: string, metadata: Record<string, string>, md5: string): Promise<void>;
}

export function keepPutsWhole(store: S3rverStore, begun: ((key: string) => void)[]): () => Promise<void>;
export function startWholeBucket(): Promise<WholeBucket>;

/** How the proxy answers one request: passed to the bucket, or one of a real bucket's faults. */
export type ProxyWay = 'pass' | 'slow-down' | 'internal-error' | 'silent' | 'reset' | 'torn';

export interface FaultProxy {
  /** The SDK's environment pointed at the proxy (the bucket's own credentials). */
  env: Record<string, string>;
  /** Decides each request's fate (by method and path); 'pass' by default. */
  decide: (method: string, path: string) => ProxyWay;
  /** Requests seen, by how they were answered, and the spells of refusal. */
  seen: Record<ProxyWay | 'refused', number>;
  /** Requests read and never answered whose connection the client still holds open. */
  heldOpen(): number;
  /** Refuses every connection for `ms` (nothing listens), then listens again on the same port. */
  refuseFor(ms: number): Promise<void>;
  close(): Promise<void>;
}

export function startFaultProxy(bucketEnv: Record<string, string>): Promise<FaultProxy>;
