import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { link, open, readFile, readdir, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { resolveInside } from '../manifest/index.js';
import { GenbatchError } from '../util/errors.js';
import { OWNER_FILE } from './owner.js';
import { writeWhole } from './write-whole.js';
import { makeFolder } from '../util/make-folder.js';
import type {
  ByteRange,
  OpenedFile,
  OutputCheck,
  OutputSink,
  RecordedOutput,
  SinkProblem,
  SinkWriter,
  FilesHere,
} from './sink.js';

/** A new output's name is held by other bytes: it is not overwritten. */
export class OutputExistsError extends GenbatchError {
  readonly code = 'EEXIST';
}

/** Where a file's bytes go before it is put in place: a new file (injectable, so that tests can make the disk full). */
export interface FolderFile {
  /** Appends every byte of `chunks`. */
  write(chunks: readonly Uint8Array[]): Promise<void>;
  /** Closes it, synced to the disk first when `durable`: its modification time (ms). */
  finish(durable: boolean): Promise<number>;
  /** Closes it, unfinished (the caller removes it). */
  close(): Promise<void>;
}

/** A new file at `path` (never an existing one: a temporary name of ours). */
export async function openFolderFile(path: string): Promise<FolderFile> {
  const handle = await open(path, 'wx');
  return {
    async write(chunks) {
      const buffer = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      for (let at = 0; at < buffer.length; ) at += (await handle.write(buffer, at, buffer.length - at)).bytesWritten;
    },
    async finish(durable) {
      if (durable) await handle.sync();
      const { mtimeMs } = await handle.stat();
      await handle.close();
      return mtimeMs;
    },
    close: () => handle.close(),
  };
}

/** Temporaries are named `.<name>.<8 hex>.part` beside their final name: never a final name, so a killed run's are found and removed. */
const PART = /^\..+\.[0-9a-f]{8}\.part$/;
const PROBE_PREFIX = '.genbatch-probe-';
/** A probe a run killed between its write and its removal left at the top of the folder. */
const PROBE = /^\.genbatch-probe-[0-9a-f]{8}$/;
/** Directories already made: a catalog's 100,000 outputs would otherwise cost as many mkdir calls. */
const MADE_DIRS_KEPT = 10_000;
/** Where link(2) is refused (some network and FAT file systems), a check and a rename put a new file in place instead. */
const NO_LINK = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV']);

/** Outputs in a folder of this machine: the first sink, and the staging place of any other. */
export class FolderSink implements OutputSink {
  private readonly madeDirs = new Set<string>();
  readonly here: FilesHere = {
    pathOf: (relPath) => this.localPath(relPath),
    fileOf: (relPath) => this.localFile(relPath),
  };

  private readonly openFile: (path: string) => Promise<FolderFile>;
  private readonly replaceStrays: boolean;

  constructor(
    /** The folder's absolute path. */
    readonly location: string,
    options: {
      /** Opens a temporary file; injectable so tests can make the disk full. */
      openFile?: (path: string) => Promise<FolderFile>;
      /** A rehearsal starts over in its own folder: what an earlier rehearsal left there is replaced, not kept. */
      replaceStrays?: boolean;
    } = {},
  ) {
    this.openFile = options.openFile ?? openFolderFile;
    this.replaceStrays = options.replaceStrays ?? false;
  }

  async probe(): Promise<SinkProblem | undefined> {
    const probe = join(this.location, `${PROBE_PREFIX}${randomBytes(4).toString('hex')}`);
    try {
      await makeFolder(this.location);
      await writeFile(probe, 'genbatch checks that outputs can be written here\n', { flush: true });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'WRITE_FAILED';
      return { code, message: `cannot write to the output dir ${this.location} (${code})` };
    } finally {
      await rm(probe, { force: true }).catch(() => undefined);
    }
    return undefined;
  }

  async readMarker(): Promise<string | undefined> {
    return readFile(join(this.location, OWNER_FILE), 'utf8').catch((error: NodeJS.ErrnoException) =>
      error.code === 'ENOENT' ? undefined : Promise.reject(error),
    );
  }

  async writeMarker(text: string): Promise<void> {
    await writeWhole(this, OWNER_FILE, 'replace', text, { durable: true });
  }

  async create(
    relPath: string,
    mode: 'new' | 'replace',
    options: { durable?: boolean; output?: boolean } = {},
  ): Promise<SinkWriter> {
    const finalPath = resolveInside(this.location, relPath);
    const dir = dirname(finalPath);
    if (!this.madeDirs.has(dir)) await this.makeDir(dir);
    const tmpPath = join(dir, `.${basename(finalPath)}.${randomBytes(4).toString('hex')}.part`);
    const file = await this.openInDir(dir, tmpPath);
    const put = this.replaceStrays ? 'replace' : mode;
    return new FolderWriter(finalPath, tmpPath, file, put, options.durable ?? mode === 'new');
  }

  /**
   * By size and modification time, and by sha256 only when either changed,
   * so a resume of a large catalog reads no file that nothing touched.
   */
  async check(out: RecordedOutput): Promise<OutputCheck> {
    const path = resolveInside(this.location, out.path);
    const info = await stat(path).catch(() => undefined);
    if (!info?.isFile()) return { verdict: 'missing' };
    if (info.size !== out.bytes) return { verdict: 'resized' };
    const mtimeMs = Math.trunc(info.mtimeMs);
    if (mtimeMs === out.mtime_ms) return { verdict: 'unchanged' };
    return (await sha256Of(path)) === out.sha256 ? { verdict: 'same-bytes', mtimeMs } : { verdict: 'altered' };
  }

  /** Only a file inside the folder once links are followed: `..`, an absolute path or a link out of it is not there. */
  async open(relPath: string): Promise<OpenedFile | undefined> {
    const path = await this.realPathInside(relPath);
    const info = path ? await stat(path).catch(() => undefined) : undefined;
    if (!path || !info?.isFile()) return undefined;
    return { size: info.size, read: (range?: ByteRange) => createReadStream(path, range) };
  }

  localPath(relPath: string): string {
    return resolveInside(this.location, relPath);
  }

  async localFile(relPath: string): Promise<string | undefined> {
    return this.realPathInside(relPath);
  }

  /** Holds nothing open between calls. */
  async close(): Promise<void> {}

  /** Temporaries of writes, and probes, a killed run left behind (never under a final name). */
  async cleanUp(): Promise<void> {
    const entries = await readdir(this.location, { recursive: true, withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const dir = e.parentPath ?? this.location;
      const leftover = PART.test(e.name) || (dir === this.location && PROBE.test(e.name));
      if (e.isFile() && leftover) await rm(join(dir, e.name), { force: true });
    }
  }

  private async makeDir(dir: string): Promise<void> {
    await makeFolder(dir);
    if (this.madeDirs.size >= MADE_DIRS_KEPT) this.madeDirs.clear();
    this.madeDirs.add(dir);
  }

  /** A dir removed since it was made is made again when a file cannot be opened in it (ENOENT). */
  private async openInDir(dir: string, path: string): Promise<FolderFile> {
    try {
      return await this.openFile(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      this.madeDirs.delete(dir);
      await this.makeDir(dir);
      return this.openFile(path);
    }
  }

  private async realPathInside(relPath: string): Promise<string | undefined> {
    let path: string;
    try {
      path = resolveInside(this.location, relPath);
    } catch {
      return undefined;
    }
    const [real, root] = await Promise.all([
      realpath(path).catch(() => undefined),
      realpath(this.location).catch(() => this.location),
    ]);
    return real?.startsWith(root + sep) ? real : undefined;
  }
}

class FolderWriter implements SinkWriter {
  constructor(
    readonly location: string,
    private readonly tmpPath: string,
    private readonly file: FolderFile,
    private readonly mode: 'new' | 'replace',
    private readonly durable: boolean,
  ) {}

  write(data: string | Uint8Array | readonly Uint8Array[]): Promise<void> {
    if (typeof data === 'string') return this.file.write([Buffer.from(data)]);
    return this.file.write(data instanceof Uint8Array ? [data] : data);
  }

  /** Synced (a durable file) before it is put in place, so its name always holds a whole file. */
  async commit(expected?: { bytes: number; sha256: string }): Promise<number> {
    const mtimeMs = Math.trunc(await this.file.finish(this.durable));
    try {
      if (this.mode === 'replace') await rename(this.tmpPath, this.location);
      else return (await this.putNew(expected)) ?? mtimeMs;
    } finally {
      await rm(this.tmpPath, { force: true });
    }
    return mtimeMs;
  }

  async abort(): Promise<void> {
    await this.file.close().catch(() => {});
    await rm(this.tmpPath, { force: true });
  }

  /**
   * A hard link puts the file in place only where nothing is; what is there
   * already counts only if it holds the same bytes (a save redone after a
   * kill): then its own modification time is the file's.
   */
  private async putNew(expected: { bytes: number; sha256: string } | undefined): Promise<number | undefined> {
    try {
      await link(this.tmpPath, this.location);
      return undefined;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? '';
      if (NO_LINK.has(code) && !existsSync(this.location)) return void (await rename(this.tmpPath, this.location));
      if (code !== 'EEXIST' && !NO_LINK.has(code)) throw error;
    }
    const there = await stat(this.location).catch(() => undefined);
    if (expected && there?.size === expected.bytes && (await sha256Of(this.location)) === expected.sha256)
      return Math.trunc(there.mtimeMs);
    throw new OutputExistsError(`${this.location} holds another file; it is not overwritten`);
  }
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}
