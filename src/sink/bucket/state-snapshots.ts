import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import { GenbatchError } from '../../util/errors.js';
import type { Snapshotable, StateCopies, TakenSnapshot } from '../sink.js';
import type { PatientBucket } from './patient-bucket.js';
import { makeFolder } from '../../util/make-folder.js';

/** Snapshots kept under the prefix: the newest and two before it (a torn one falls back to the one before). */
const KEPT = 3;

/** One snapshot as the pointer lists it. */
interface SnapshotEntry {
  key: string;
  sha256: string;
  bytes: number;
  takenAt: number;
}

/** No snapshot could be restored (each one listed was torn or unreadable). */
export class SnapshotError extends GenbatchError {}

/** The state's file name without `.sqlite`: the folder its snapshots go under. */
const stateNameOf = (statePath: string) => basename(statePath).replace(/\.sqlite$/, '');

/**
 * The state kept beside its outputs, so a run outlives the machine it began
 * on. A snapshot is SQLite's online backup (consistent while the run and
 * reviewers write), gzipped, put create-only under
 * `.genbatch/state/<name>/<time>-<random>.sqlite.gz` with its sha256, and
 * only then named by the pointer `latest.json`, which lists the newest three.
 * A kill at any instant leaves the pointer naming whole snapshots: an object
 * put half-way is never named, and a pointer is replaced whole.
 */
export class StateSnapshots implements StateCopies {
  private readonly dir: string;

  constructor(
    private readonly bucket: PatientBucket,
    private readonly keyOf: (relPath: string) => string,
    /** The state file whose snapshots these are. */
    private readonly statePath: string,
    /** A local folder for the copy while it is made. */
    private readonly workDir: string,
  ) {
    this.dir = `.genbatch/state/${stateNameOf(statePath)}`;
  }

  /** The state now, to the bucket; the pointer then names it, and snapshots older than the kept ones are removed. */
  async take(state: Snapshotable, now: () => number = Date.now): Promise<TakenSnapshot> {
    const startedAt = now();
    await makeFolder(this.workDir);
    const copy = join(this.workDir, `.snapshot-${randomBytes(4).toString('hex')}.sqlite`);
    const packed = `${copy}.gz`;
    try {
      await state.backupTo(copy);
      const hash = createHash('sha256');
      await pipeline(createReadStream(copy), createGzip({ level: 1 }), tap(hash), createWriteStream(packed));
      const sha256 = hash.digest('hex');
      const { size: bytes } = await stat(packed);
      const takenAt = now();
      const key = this.keyOf(
        `${this.dir}/${String(takenAt).padStart(15, '0')}-${randomBytes(3).toString('hex')}.sqlite.gz`,
      );
      await this.bucket.putNew(key, { path: packed, bytes, sha256, contentType: 'application/gzip' });
      const listed = [{ key, sha256, bytes, takenAt }, ...(await this.listed())];
      await this.writePointer(listed.slice(0, KEPT));
      for (const old of listed.slice(KEPT)) await this.bucket.delete(old.key).catch(() => undefined);
      return { key, bytes, ms: now() - startedAt };
    } finally {
      await rm(copy, { force: true });
      await rm(packed, { force: true });
    }
  }

  /**
   * The newest whole snapshot, put in place at the state's path (which must
   * not exist): each one the pointer lists is fetched, its sha256 checked,
   * unpacked and opened; a torn or unreadable one is passed over for the one
   * before. Undefined when none was ever taken.
   */
  async restore(
    /** Why a state file cannot be used (SQLite finds it damaged), or undefined: the store's own check. */
    damaged: (path: string) => string | undefined,
  ): Promise<{ key: string; takenAt: number; skipped: string[] } | undefined> {
    const listed = await this.listed();
    if (listed.length === 0) return undefined;
    const skipped: string[] = [];
    await makeFolder(dirname(this.statePath));
    for (const entry of listed) {
      const problem = await this.restoreOne(entry, damaged);
      if (!problem) return { key: entry.key, takenAt: entry.takenAt, skipped };
      skipped.push(`${entry.key}: ${problem}`);
    }
    throw new SnapshotError(
      `no snapshot of the state under ${this.dir} could be restored (${skipped.join('; ')}); nothing was submitted`,
    );
  }

  /** The state from one snapshot, or why not. */
  private async restoreOne(
    entry: SnapshotEntry,
    damaged: (path: string) => string | undefined,
  ): Promise<string | undefined> {
    const packed = `${this.statePath}.restore-${randomBytes(4).toString('hex')}.gz`;
    const unpacked = packed.replace(/\.gz$/, '');
    try {
      const got = await this.bucket.get(entry.key);
      if (!got) return 'not there';
      const hash = createHash('sha256');
      await pipeline(got.body, tap(hash), createWriteStream(packed));
      if (hash.digest('hex') !== entry.sha256) return 'its bytes are not the ones recorded (torn)';
      await pipeline(createReadStream(packed), createGunzip(), createWriteStream(unpacked));
      const damage = damaged(unpacked);
      if (damage) return damage;
      if (existsSync(this.statePath)) return 'a state appeared at its place meanwhile';
      await rename(unpacked, this.statePath);
      return undefined;
    } catch (error) {
      return (error as Error).message;
    } finally {
      await rm(packed, { force: true });
      await rm(unpacked, { force: true });
    }
  }

  private async listed(): Promise<SnapshotEntry[]> {
    const got = await this.bucket.get(this.keyOf(`${this.dir}/latest.json`));
    if (!got) return [];
    const chunks: Buffer[] = [];
    for await (const c of got.body) chunks.push(Buffer.from(c as Buffer));
    try {
      const list = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { snapshots?: SnapshotEntry[] }).snapshots;
      return Array.isArray(list) ? list.filter((e) => typeof e?.key === 'string' && typeof e.sha256 === 'string') : [];
    } catch {
      return [];
    }
  }

  private async writePointer(snapshots: SnapshotEntry[]): Promise<void> {
    const path = join(this.workDir, `.latest-${randomBytes(4).toString('hex')}.json`);
    const text = `${JSON.stringify({ snapshots, note: 'genbatch: the state snapshots of this run, newest first' }, null, 2)}\n`;
    try {
      await pipeline([text], createWriteStream(path));
      await this.bucket.putReplace(this.keyOf(`${this.dir}/latest.json`), {
        path,
        bytes: Buffer.byteLength(text),
        contentType: 'application/json',
      });
    } finally {
      await rm(path, { force: true });
    }
  }
}

/** Passes the bytes through, hashing them on the way. */
function tap(hash: ReturnType<typeof createHash>): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
}

/** How often a state that changed is snapshot while it is in use. */
export const SNAPSHOT_EVERY_MS = 30_000;
/** How long an end waits for its last snapshot (a bucket that does not answer must not hold the exit). */
const LAST_SNAPSHOT_WAIT_MS = 60_000;

/** How a snapshot keeper takes its turns. */
export interface SnapshotKeeperOptions {
  everyMs?: number | undefined;
  now?: () => number;
  /** Whether this process may write the place's snapshots now (it holds the place, or its state is the place's): checked at every turn. */
  allowed?: () => boolean | Promise<boolean>;
  /** Each snapshot taken, or why one failed. */
  said?: (what: { taken: TakenSnapshot } | { failed: string }) => void;
}

/**
 * Snapshots a state while a run or a reviewer uses it: at most every
 * `everyMs` while anything changed, and once more at the end. A snapshot that
 * fails is said and tried again at the next turn: the one before stays.
 */
export class SnapshotKeeper {
  private timer: NodeJS.Timeout | undefined;
  private taking: Promise<void> | undefined;
  private lastMark: string | undefined;

  constructor(
    private readonly snapshots: StateCopies,
    /** The state as it is now (a reviewer's handle may reopen it). */
    private readonly state: () => Snapshotable,
    private readonly options: SnapshotKeeperOptions = {},
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.turn(), this.options.everyMs ?? SNAPSHOT_EVERY_MS);
    this.timer.unref();
  }

  /** No more turns; the last snapshot taken if anything changed since the one before (waited for a minute at most). */
  async end(): Promise<void> {
    clearInterval(this.timer);
    let timer: NodeJS.Timeout | undefined;
    const giveUp = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, LAST_SNAPSHOT_WAIT_MS);
    });
    await Promise.race([
      (async () => {
        await this.taking;
        await this.turn();
      })(),
      giveUp,
    ]);
    clearTimeout(timer);
  }

  private turn(): Promise<void> {
    if (this.taking) return this.taking;
    const state = this.state();
    const mark = state.changeMark();
    if (mark === this.lastMark) return Promise.resolve();
    this.taking = (async () => (this.options.allowed ? this.options.allowed() : true))()
      .then(async (allowed) => {
        if (!allowed) return;
        const taken = await this.snapshots.take(state, this.options.now);
        // Marked as of before the copy: a commit during it makes the next turn take another.
        this.lastMark = mark;
        this.options.said?.({ taken });
      })
      .catch((error: unknown) => this.options.said?.({ failed: (error as Error).message }))
      .finally(() => {
        this.taking = undefined;
      });
    return this.taking;
  }
}
