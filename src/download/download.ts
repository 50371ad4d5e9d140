import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { ApiClient, Download } from '../api/index.js';
import { defaultExtension, resolveInside } from '../manifest/index.js';

export interface DownloadedFile {
  /** Relative to the output dir. */
  path: string;
  bytes: number;
  sha256: string;
  contentType: string | null;
  /** Modification time (ms, whole) of the file as written: a later change to it shows here. */
  mtimeMs: number;
}

/** Errors of the file system that no fresh link or other item can get past: the output dir cannot take files. */
const DISK_CODES = new Set(['ENOSPC', 'EACCES', 'EPERM', 'EROFS', 'EDQUOT']);

export type DownloadErrorCode =
  | 'LINK_FAILED'
  | 'WRONG_TYPE'
  | 'TOO_LARGE'
  | 'CUT_SHORT'
  | 'EMPTY'
  | 'NAME_TAKEN'
  | 'BAD_NAME'
  | 'WRITE_FAILED'
  | string;

export class DownloadError extends Error {
  override readonly name = 'DownloadError';
  constructor(
    message: string,
    /** True when a fresh link may help (expired, refused, cut short). */
    readonly refreshable: boolean,
    /** What went wrong, by kind; a file system error keeps its own code (ENOSPC, EACCES, …). */
    readonly code: DownloadErrorCode,
  ) {
    super(message);
  }

  /** ENOSPC, EACCES, EPERM, EROFS or EDQUOT: the output dir cannot take the file, whatever the link. */
  get diskCode(): string | undefined {
    return DISK_CODES.has(this.code) ? this.code : undefined;
  }

  /** Says something of this item alone (its name, its size), not of the output dir or the storage. */
  get itemOnly(): boolean {
    return this.code === 'NAME_TAKEN' || this.code === 'BAD_NAME' || this.code === 'TOO_LARGE';
  }
}

/** A file system error as a DownloadError, told by its code (never by its message, which holds the path). */
export function fileSystemError(error: unknown, what: string): DownloadError {
  const code = (error as NodeJS.ErrnoException).code ?? 'WRITE_FAILED';
  return new DownloadError(`cannot write ${what}: ${code}`, false, code);
}

/**
 * The media types a generation service answers with, as mime-types names
 * them (a test holds the two together). mime-types builds its whole table
 * when imported, 40-60 ms that would stall the run at its first download;
 * it is asked only for a type not listed here.
 */
export const COMMON_EXTENSIONS: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'image/avif': 'avif',
  'video/mp4': 'mp4',
  'video/webm': 'webm',
};

let mimeTypes: Promise<typeof import('mime-types')> | undefined;

export async function extensionFor(contentType: string | null | undefined, type: 'image' | 'video'): Promise<string> {
  const essence = contentType?.split(';', 1)[0]?.trim().toLowerCase();
  const ext = !essence
    ? false
    : (COMMON_EXTENSIONS[essence] ?? (await (mimeTypes ??= import('mime-types'))).extension(essence));
  if (ext === 'jpeg') return 'jpg';
  return ext && /^[a-z0-9]{1,8}$/.test(ext) ? ext : defaultExtension(type);
}

/** Where an output's bytes go before its rename: a new file (injectable, so that tests can make the disk full). */
export interface OutputFile {
  /** Appends every byte of `chunks`. */
  write(chunks: readonly Buffer[]): Promise<void>;
  /** Flushes the file to the disk and closes it: its modification time (ms). */
  finish(): Promise<number>;
  /** Closes it, unfinished (the caller removes it). */
  close(): Promise<void>;
}

/** A new file at `path` (never an existing one: a temporary name of ours). */
export async function openOutputFile(path: string): Promise<OutputFile> {
  const handle = await open(path, 'wx');
  return {
    async write(chunks) {
      const buffer = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      for (let at = 0; at < buffer.length; ) at += (await handle.write(buffer, at, buffer.length - at)).bytesWritten;
    },
    async finish() {
      await handle.sync();
      const { mtimeMs } = await handle.stat();
      await handle.close();
      return mtimeMs;
    },
    close: () => handle.close(),
  };
}

/** Bytes gathered before a write: one write for an image, a few hundred for a video. */
const WRITE_BYTES = 1024 * 1024;

/**
 * Directories outputs were saved in: a catalog's 100,000 outputs would
 * otherwise cost as many mkdir calls. One removed since is made again when a
 * file cannot be opened in it (ENOENT).
 */
const madeDirs = new Set<string>();
const MADE_DIRS_KEPT = 10_000;

async function makeDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  if (madeDirs.size >= MADE_DIRS_KEPT) madeDirs.clear();
  madeDirs.add(dir);
}

async function openInDir(
  dir: string,
  path: string,
  openFile: (path: string) => Promise<OutputFile>,
): Promise<OutputFile> {
  try {
    return await openFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    madeDirs.delete(dir);
    await makeDir(dir);
    return openFile(path);
  }
}

/** The output link, opened: what it serves must be of the item's type and within the size limit. */
async function openLink(
  client: ApiClient,
  url: string,
  type: 'image' | 'video',
  maxBytes: number,
  signal: AbortSignal | undefined,
): Promise<{ dl: Download; contentType: string | null }> {
  let dl: Download;
  try {
    dl = await client.download(url, signal);
  } catch (error) {
    throw new DownloadError((error as Error).message, true, 'LINK_FAILED');
  }
  const contentType = dl.contentType?.split(';')[0]?.trim().toLowerCase() ?? null;
  if (contentType && !contentType.startsWith(`${type}/`) && contentType !== 'application/octet-stream') {
    dl.cancel();
    const what = type === 'image' ? 'an image' : 'a video';
    throw new DownloadError(`the output link served ${contentType}, not ${what}`, true, 'WRONG_TYPE');
  }
  if (dl.contentLength !== undefined && dl.contentLength > maxBytes) {
    dl.cancel();
    throw new DownloadError(
      `the output is ${dl.contentLength} bytes, over the limit of ${maxBytes} (--max-output-mb)`,
      false,
      'TOO_LARGE',
    );
  }
  return { dl, contentType };
}

/** The body into the file, hashed and counted on the way, written a megabyte at a time; its byte count. */
async function writeBody(
  dl: Download,
  file: OutputFile,
  hash: ReturnType<typeof createHash>,
  maxBytes: number,
  signal: AbortSignal | undefined,
): Promise<number> {
  let bytes = 0;
  let gathered: Buffer[] = [];
  let gatheredBytes = 0;
  for await (const chunk of dl.body as AsyncIterable<Buffer>) {
    signal?.throwIfAborted();
    hash.update(chunk);
    bytes += chunk.length;
    if (bytes > maxBytes)
      throw new DownloadError(
        `the output is over the limit of ${maxBytes} bytes (--max-output-mb); stopped reading it`,
        false,
        'TOO_LARGE',
      );
    gathered.push(chunk);
    gatheredBytes += chunk.length;
    if (gatheredBytes >= WRITE_BYTES) {
      await file.write(gathered);
      gathered = [];
      gatheredBytes = 0;
    }
  }
  if (gatheredBytes > 0) await file.write(gathered);
  return bytes;
}

/**
 * Reads one output into a temporary file beside its final name, hashing it
 * and counting its bytes on the way, checks its size against Content-Length,
 * syncs it, and renames it into place: a file under its final name is always
 * whole.
 */
export async function downloadOutput(
  client: ApiClient,
  url: string,
  outDir: string,
  type: 'image' | 'video',
  nameFor: (ext: string) => string,
  signal?: AbortSignal,
  /** A bigger (or endless) body is cut off: it would only fill the disk. */
  maxBytes = 2 * 1024 ** 3,
  /** Opens the temporary file; injectable so tests can make the disk full. */
  openFile: (path: string) => Promise<OutputFile> = openOutputFile,
): Promise<DownloadedFile> {
  const { dl, contentType } = await openLink(client, url, type, maxBytes, signal);
  const relPath = nameFor(await extensionFor(contentType, type));
  const finalPath = resolveInside(outDir, relPath);
  const dir = dirname(finalPath);
  try {
    if (!madeDirs.has(dir)) await makeDir(dir);
  } catch (error) {
    dl.cancel();
    throw fileSystemError(error, dirname(relPath) === '.' ? 'the output dir' : dirname(relPath));
  }
  const tmpPath = join(dir, `.${basename(finalPath)}.${randomBytes(4).toString('hex')}.part`);
  const hash = createHash('sha256');
  let bytes = 0;
  let mtimeMs = 0;
  let file: OutputFile | undefined;
  try {
    file = await openInDir(dir, tmpPath, openFile);
    bytes = await writeBody(dl, file, hash, maxBytes, signal);
    if (dl.contentLength !== undefined && bytes !== dl.contentLength) {
      throw new DownloadError(`the download was cut short: ${bytes} of ${dl.contentLength} bytes`, true, 'CUT_SHORT');
    }
    if (bytes === 0) throw new DownloadError('the output is empty', true, 'EMPTY');
    // Synced before the rename, so the rename publishes a whole file.
    mtimeMs = Math.trunc(await file.finish());
    file = undefined;
    await rename(tmpPath, finalPath);
  } catch (error) {
    dl.cancel();
    await file?.close().catch(() => {});
    await rm(tmpPath, { force: true });
    if (error instanceof DownloadError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code && DISK_CODES.has(code)) throw fileSystemError(error, relPath);
    throw new DownloadError(`the download failed: ${(error as Error).message}`, true, code ?? 'LINK_FAILED');
  }
  return { path: relPath, bytes, sha256: hash.digest('hex'), contentType, mtimeMs };
}
