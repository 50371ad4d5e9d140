import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { text } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import mime from 'mime-types';
import { resolveInside, type BucketLocation } from '../../manifest/index.js';
import type { FolderSink } from '../folder.js';
import { OWNER_FILE } from '../owner.js';
import { writeWhole } from '../write-whole.js';
import type {
  OpenedFile,
  OutputCheck,
  OutputSink,
  Publishing,
  RecordedOutput,
  SinkProblem,
  SinkWriter,
  StagedOutput,
} from '../sink.js';
import { bucketPolicy, bucketProblem, classify } from './bucket-policy.js';
import { BucketError, type BucketClient, type BucketObject } from './bucket-client.js';
import { PatientBucket, type Patience } from './patient-bucket.js';
import { StateSnapshots } from './state-snapshots.js';
import { makeFolder } from '../../util/make-folder.js';

/** A name already held in the bucket by other bytes: the output is not put over it. */
export class ObjectTakenError extends BucketError {}

/** Where results and pages are written before they are put in the bucket, inside the staging folder. */
const REPORTS_DIR = '.reports';
/** Copies of published outputs fetched back to be uploaded as another item's input. */
const INPUTS_DIR = '.inputs';

/** How a bucket sink keeps its files and rides out its bucket's faults. */
export interface BucketSinkOptions {
  /** Keep each staged file once published (--keep-local). */
  keepLocal: boolean;
  patience: Patience;
  /** The state file, when not beside the staging folder (`<state>.staging`). */
  statePath?: string;
}

/**
 * Outputs published to an S3-compatible bucket in two durable steps: each is
 * saved and verified in a staging folder beside the state (as in any out
 * dir), then put in the bucket create-only and verified there (size and
 * sha256); only then is the local file removed (unless kept), and the
 * publication recorded. Web copies go the same way.
 * The results, the sidecars and the gallery are written locally, then put.
 * Every call goes through one PatientBucket: the bucket's faults are ridden
 * out there, never at a call site.
 */
export class BucketSink implements OutputSink {
  readonly location: string;
  readonly publishing: Publishing;
  /** The state kept beside the outputs: its snapshots under the prefix. */
  readonly snapshots: StateSnapshots;
  private readonly bucket: PatientBucket;

  constructor(
    where: BucketLocation,
    client: BucketClient,
    /** The staging folder: outputs wait there, verified, until they are published. */
    private readonly staging: FolderSink,
    private readonly options: BucketSinkOptions,
  ) {
    this.bucket = new PatientBucket(client, options.patience);
    const patient = this.bucket;
    this.location = `s3://${where.bucket}${where.prefix ? `/${where.prefix}` : ''}`;
    const prefix = where.prefix ? `${where.prefix}/` : '';
    this.keyOf = (relPath) => `${prefix}${relPath.split('\\').join('/')}`;
    // The state beside its staging folder (`<state>.staging`) unless named.
    const statePath = options.statePath ?? staging.location.replace(/\.staging$/, '.sqlite');
    this.snapshots = new StateSnapshots(this.bucket, this.keyOf, statePath, staging.location);
    this.publishing = {
      location: this.location,
      staging: staging.location,
      urlOf: (relPath) => `s3://${where.bucket}/${this.keyOf(relPath)}`,
      publish: (out, signal) => this.publish(out, signal),
      dropLocal: (relPath) => this.dropLocal(relPath),
      isStaged: (relPath) => existsSync(this.staging.localPath(relPath)),
      get trouble() {
        return patient.trouble;
      },
      watch: (listener) => patient.watch(listener),
      abandon: (why) => patient.abandon(why),
      get abandoned() {
        return patient.abandoned;
      },
    };
  }

  private readonly keyOf: (relPath: string) => string;

  /** The staging folder takes files, and the bucket takes (and gives back) an object under the prefix. */
  async probe(): Promise<SinkProblem | undefined> {
    const local = await this.staging.probe();
    if (local) return local;
    const key = this.keyOf(`.genbatch-probe-${randomBytes(4).toString('hex')}`);
    const file = join(this.staging.location, `.probe-${randomBytes(4).toString('hex')}`);
    try {
      const text = 'genbatch checks that outputs can be written here\n';
      await makeFolder(this.staging.location);
      await pipeline([text], createWriteStream(file));
      await this.bucket.putReplace(key, { path: file, bytes: text.length, contentType: 'text/plain' });
      await this.bucket.delete(key).catch(() => undefined);
      return undefined;
    } catch (error) {
      return bucketProblem(this.location, error);
    } finally {
      await rm(file, { force: true });
    }
  }

  async readMarker(): Promise<string | undefined> {
    const got = await this.bucket.get(this.keyOf(OWNER_FILE));
    return got ? text(got.body) : undefined;
  }

  async writeMarker(marker: string): Promise<void> {
    await writeWhole(this, OWNER_FILE, 'replace', marker);
  }

  /** An output is saved in the staging folder (then published); anything else is put in the bucket at its commit. */
  async create(relPath: string, mode: 'new' | 'replace', options: { durable?: boolean; output?: boolean } = {}) {
    if (options.output) return this.staging.create(relPath, mode, options);
    resolveInside(this.staging.location, relPath);
    const local = `${REPORTS_DIR}/${randomBytes(4).toString('hex')}-${relPath.split(/[\\/]/).join('_')}`;
    const writer = await this.staging.create(local, 'replace', { durable: false });
    return new BucketWriter(writer, this.publishing.urlOf(relPath), async (signal) => {
      const path = this.staging.localPath(local);
      const { size } = await stat(path);
      try {
        await this.bucket.putReplace(
          this.keyOf(relPath),
          { path, bytes: size, contentType: contentTypeOf(relPath) },
          { signal },
        );
      } finally {
        await rm(path, { force: true });
      }
    });
  }

  /**
   * A published output is as it was verified in the bucket; one waiting to
   * be is checked in the staging folder, and, when its copy is gone, in the
   * bucket (published since the state was read, by this run or a killed one).
   */
  async check(recorded: RecordedOutput): Promise<OutputCheck> {
    if (recorded.published) return { verdict: 'unchanged' };
    const local = await this.staging.check(recorded);
    if (local.verdict !== 'missing') return local;
    let there: BucketObject | undefined;
    try {
      there = await this.bucket.head(this.keyOf(recorded.path));
    } catch (error) {
      // A bucket that could not be asked is no evidence of a loss: it waits to be published (or found lost) later.
      if (bucketPolicy('look', classify(error, `HEAD ${recorded.path}`)).do === 'not-lost')
        return { verdict: 'unchanged' };
      throw error;
    }
    const same = there?.size === recorded.bytes && there.sha256 === recorded.sha256;
    return same ? { verdict: 'unchanged' } : local;
  }

  /** The staged file while there is one, else the object. */
  async open(relPath: string): Promise<OpenedFile | undefined> {
    const local = await this.staging.open(relPath);
    if (local) return local;
    try {
      resolveInside(this.staging.location, relPath);
    } catch {
      return undefined;
    }
    const there = await this.bucket.head(this.keyOf(relPath));
    if (!there) return undefined;
    return {
      size: there.size,
      read: (range) => {
        const out = new PassThrough();
        this.bucket
          .get(this.keyOf(relPath), range)
          .then(async (got) => {
            if (got) await pipeline(got.body, out);
            else out.end();
          })
          .catch((error: unknown) => out.destroy(error as Error));
        return out;
      },
    };
  }

  /** The staged file, else the object fetched back into the staging folder (an input of a later item). */
  async localFile(relPath: string): Promise<string | undefined> {
    const staged = await this.staging.localFile(relPath);
    if (staged) return staged;
    const got = await this.bucket.get(this.keyOf(relPath));
    if (!got) return undefined;
    const path = resolveInside(join(this.staging.location, INPUTS_DIR), relPath);
    await makeFolder(join(path, '..'));
    await pipeline(got.body, createWriteStream(path));
    return path;
  }

  async close(): Promise<void> {
    this.bucket.close();
    await this.staging.close();
  }

  async cleanUp(): Promise<void> {
    await this.staging.cleanUp();
    // Results written but not put, and inputs fetched back from the bucket: made again when needed.
    await rm(join(this.staging.location, REPORTS_DIR), { recursive: true, force: true });
    await rm(join(this.staging.location, INPUTS_DIR), { recursive: true, force: true });
  }

  /**
   * Puts a staged output in the bucket, create-only, and verifies it there.
   * An object already under its key with the same size and sha256 is this
   * output published by a run killed before it recorded so: nothing is put
   * again. One with other bytes is never overwritten (ObjectTakenError).
   */
  private async publish(out: StagedOutput, signal?: AbortSignal): Promise<string> {
    const key = this.keyOf(out.path);
    const url = this.publishing.urlOf(out.path);
    const there = await this.bucket.head(key, { signal });
    if (there) return this.sameOrTaken(there, out, url);
    const path = this.staging.localPath(out.path);
    // Gone since it was saved (a resume found it lost and downloads it again): that download publishes it.
    if (!existsSync(path))
      throw new BucketError(`${out.path} is no longer in ${this.staging.location}`, 'failed', 'NOT_STAGED');
    const source = {
      path,
      bytes: out.bytes,
      sha256: out.sha256,
      contentType: out.contentType ?? contentTypeOf(out.path),
    };
    const put = await this.bucket.putNew(key, source, { signal });
    const now = await this.bucket.head(key, { signal });
    if (!now) throw new BucketError(`${url} was put but is not there`, 'failed', 'NOT_THERE');
    if (put === 'exists') return this.sameOrTaken(now, out, url);
    if (now.size !== out.bytes || now.sha256 !== out.sha256)
      throw new BucketError(
        `${url} holds ${now.size} bytes (sha256 ${now.sha256 ?? 'none'}) after the upload of ${out.bytes} bytes (sha256 ${out.sha256})`,
        'failed',
        'VERIFY_FAILED',
      );
    return url;
  }

  private sameOrTaken(there: { size: number; sha256: string | undefined }, out: StagedOutput, url: string): string {
    if (there.size === out.bytes && there.sha256 === out.sha256) return url;
    throw new ObjectTakenError(
      `${url} holds another object (${there.size} bytes); it is not overwritten. Move it away (or give another --out prefix) and run the same command again: the output waits in ${this.staging.location}`,
      'failed',
      'NAME_TAKEN',
    );
  }

  private async dropLocal(relPath: string): Promise<void> {
    if (this.options.keepLocal) return;
    await rm(this.staging.localPath(relPath), { force: true });
  }
}

/** A file put in the bucket whole at its commit (written locally first, so a failed run leaves no partial object). */
class BucketWriter implements SinkWriter {
  constructor(
    private readonly local: SinkWriter,
    readonly location: string,
    private readonly put: (signal?: AbortSignal) => Promise<void>,
  ) {}

  write(data: string | Uint8Array | readonly Uint8Array[]): Promise<void> {
    return this.local.write(data);
  }

  async commit(): Promise<number> {
    const mtimeMs = await this.local.commit();
    await this.put();
    return mtimeMs;
  }

  abort(): Promise<void> {
    return this.local.abort();
  }
}

function contentTypeOf(relPath: string): string {
  return mime.lookup(relPath) || 'application/octet-stream';
}
