import { createHash } from 'node:crypto';
import { imageSize } from 'image-size';
import { dirname } from 'node:path';
import type { ApiClient, Download } from '../api/index.js';
import { defaultExtension } from '../manifest/index.js';
import type { TransferProgress } from '../scheduler/transfers.js';
import { OutputExistsError, type OutputSink, type SinkWriter } from '../sink/index.js';
import { GenbatchError } from '../util/errors.js';

export interface DownloadedFile {
  /** Relative to the output dir. */
  path: string;
  bytes: number;
  sha256: string;
  contentType: string | null;
  /** Modification time (ms, whole) of the file as written: a later change to it shows here. */
  mtimeMs: number;
  /** An image's size as its header says, when it says one. */
  dimensions?: { width: number; height: number } | undefined;
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

export class DownloadError extends GenbatchError {
  constructor(
    message: string,
    /** True when a fresh link may help (expired, refused, cut short). */
    readonly refreshable: boolean,
    /** What went wrong, by kind; a file system error keeps its own code (ENOSPC, EACCES, …). */
    readonly code: DownloadErrorCode,
    options?: { cause?: unknown },
  ) {
    super(message, options);
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
  return new DownloadError(`cannot write ${what}: ${code}`, false, code, { cause: error });
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

/** Bytes gathered before a write: one write for an image, a few hundred for a video. */
const WRITE_BYTES = 1024 * 1024;

/** The output link, opened: what it serves must be of the item's type and within the size limit. */
async function openLink(
  client: ApiClient,
  url: string,
  type: 'image' | 'video',
  maxBytes: number,
  signal: AbortSignal | undefined,
  idleTimeoutMs: number | undefined,
): Promise<{ dl: Download; contentType: string | null }> {
  let dl: Download;
  try {
    dl = await client.download(url, signal, idleTimeoutMs);
  } catch (error) {
    throw new DownloadError((error as Error).message, true, 'LINK_FAILED', { cause: error });
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

/** A file's first bytes kept as it is read: an image's header says its size there (a JPEG's after its metadata). */
const HEAD_BYTES = 64 * 1024;

/** The body into the file, hashed and counted on the way, written a megabyte at a time; its byte count and its first bytes. */
async function writeBody(
  dl: Download,
  file: SinkWriter,
  hash: ReturnType<typeof createHash>,
  maxBytes: number,
  signal: AbortSignal | undefined,
  progress: TransferProgress | undefined,
): Promise<{ bytes: number; head: Buffer }> {
  let bytes = 0;
  let gathered: Buffer[] = [];
  let gatheredBytes = 0;
  const head: Buffer[] = [];
  for await (const chunk of dl.body as AsyncIterable<Buffer>) {
    signal?.throwIfAborted();
    progress?.moved();
    hash.update(chunk);
    if (bytes < HEAD_BYTES) head.push(chunk.subarray(0, HEAD_BYTES - bytes));
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
  return { bytes, head: Buffer.concat(head) };
}

/** An image's size by its header, if it says one the reader knows. */
function dimensionsOf(head: Buffer): DownloadedFile['dimensions'] {
  try {
    const { width, height } = imageSize(head);
    return { width, height };
  } catch {
    return undefined;
  }
}

/** The largest output taken unless the run says otherwise (--max-output-mb): an endless body would fill the disk. */
export const MAX_OUTPUT_BYTES = 2 * 1024 ** 3;

/** An output's link opened: its media type (and so its extension) known, its body not read yet. */
export interface OpenedOutput {
  readonly contentType: string | null;
  readonly ext: string;
  /**
   * Reads the body into the sink (a temporary beside its final name),
   * hashing it and counting its bytes on the way, checks its size against
   * Content-Length, and commits it: under its final name a file is always
   * whole, and a new output never replaces a file it does not own. `mode`:
   * whether an earlier file of this very output may be there to replace.
   */
  saveAs(sink: OutputSink, name: { path: string; mode: 'new' | 'replace' }): Promise<DownloadedFile>;
  /** Leaves the body unread (no name could be had for it). */
  cancel(): void;
}

/** Opens an output's link: its headers read, so the caller can name the file before its body is read. */
export async function openOutput(
  client: ApiClient,
  url: string,
  type: 'image' | 'video',
  options: DownloadOptions = {},
): Promise<OpenedOutput> {
  const { signal, maxBytes = MAX_OUTPUT_BYTES, idleTimeoutMs, progress } = options;
  const { dl, contentType } = await openLink(client, url, type, maxBytes, signal, idleTimeoutMs);
  const ext = await extensionFor(contentType, type);
  return {
    contentType,
    ext,
    cancel: () => dl.cancel(),
    saveAs: async (sink, { path: relPath, mode }) => {
      let file: SinkWriter;
      try {
        file = await sink.create(relPath, mode, { output: true });
      } catch (error) {
        dl.cancel();
        // Its folder cannot be made, or its temporary opened: the place, not the link.
        throw fileSystemError(error, dirname(relPath) === '.' ? 'the output dir' : dirname(relPath));
      }
      const hash = createHash('sha256');
      let bytes = 0;
      let head: Buffer;
      progress?.began();
      try {
        ({ bytes, head } = await writeBody(dl, file, hash, maxBytes, signal, progress));
        if (dl.contentLength !== undefined && bytes !== dl.contentLength) {
          throw new DownloadError(
            `the download was cut short: ${bytes} of ${dl.contentLength} bytes`,
            true,
            'CUT_SHORT',
          );
        }
        if (bytes === 0) throw new DownloadError('the output is empty', true, 'EMPTY');
        const sha256 = hash.digest('hex');
        const mtimeMs = await file.commit({ bytes, sha256 });
        const dimensions = type === 'image' ? dimensionsOf(head) : undefined;
        return { path: relPath, bytes, sha256, contentType, mtimeMs, dimensions };
      } catch (error) {
        dl.cancel();
        await file.abort();
        throw asDownloadError(error, relPath, idleTimeoutMs);
      } finally {
        progress?.ended();
      }
    },
  };
}

export interface DownloadOptions {
  /** An interrupt: the transfer stops. */
  signal?: AbortSignal | undefined;
  /** A bigger (or endless) body is cut off: it would only fill the disk. */
  maxBytes?: number | undefined;
  /** No byte for this long (the headers, or between pieces of the body): the transfer is abandoned. */
  idleTimeoutMs?: number | undefined;
  /** Told of each piece that arrives. */
  progress?: TransferProgress | undefined;
}

/** Undici's codes for a body, or headers, that stopped coming. */
const STALL_CODES = new Set(['UND_ERR_BODY_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT']);

/** What a failed write or commit says, as a DownloadError: the disk's codes, a name held by another file, a stall, or the link's failure. */
function asDownloadError(error: unknown, relPath: string, idleTimeoutMs: number | undefined): DownloadError {
  if (error instanceof DownloadError) return error;
  if (STALL_CODES.has((error as { code?: string }).code ?? ''))
    return new DownloadError(
      `the transfer stalled: no byte for ${idleTimeoutMs === undefined ? 'too long' : `${idleTimeoutMs / 1000} s`}; it was abandoned and is tried again from a fresh link`,
      true,
      'STALLED',
      { cause: error },
    );
  if (error instanceof OutputExistsError)
    return new DownloadError(
      `the output would be saved as ${relPath}, which holds a file the state does not know; it is not overwritten. Move that file away and run the same command again`,
      false,
      'NAME_TAKEN',
      { cause: error },
    );
  const code = (error as NodeJS.ErrnoException).code;
  if (code && DISK_CODES.has(code)) return fileSystemError(error, relPath);
  return new DownloadError(`the download failed: ${(error as Error).message}`, true, code ?? 'LINK_FAILED', {
    cause: error,
  });
}
