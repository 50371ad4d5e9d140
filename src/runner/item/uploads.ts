import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { ApiClient } from '../../api/index.js';
import type { Pacer } from '../../scheduler/pacer.js';
import type { Store } from '../../store/index.js';
import { fileSha256 } from '../core/identity.js';
import { GenbatchError } from '../../util/errors.js';

export class InputError extends GenbatchError {
  override readonly name = 'InputError';
}

/** What the bytes are, not what the name says. */
export async function detectMedia(path: string): Promise<{ kind: 'image' | 'video'; contentType: string }> {
  const { fileTypeFromFile } = await import('file-type'); // only a manifest with input files needs it: not loaded at start
  const type = await fileTypeFromFile(path);
  const kind = type?.mime.startsWith('image/') ? 'image' : type?.mime.startsWith('video/') ? 'video' : undefined;
  if (!type || !kind)
    throw new InputError(`${path} is not an image or a video (its bytes look like ${type?.mime ?? 'nothing known'})`);
  return { kind, contentType: type.mime };
}

export interface UploadContext {
  /** The client of the key the uploads are for, and that key's fingerprint: an upload is used with the key it was granted to. */
  client: ApiClient;
  keyFp: string;
  store: Store;
  window: Pacer;
  now: () => number;
  /** Material must stay valid at least this long after it is (re)used. */
  validityMarginMs: number;
  /** Uploads under way in this run with this key, by content and target: concurrent items share one. */
  inFlight: Map<string, Promise<string>>;
  /** An interrupt: grants still waiting for their turn are not sent. */
  signal?: AbortSignal;
  /** A PUT that moves no byte for this long is abandoned (and the upload tried again later). */
  idleTimeoutMs?: number | undefined;
}

/**
 * The upload key for a file, as an input of `target`: an earlier upload of the
 * same bytes while still valid, else a new grant (through the upload window)
 * and a PUT of the file with exactly the granted Content-Type and size.
 */
export async function uploadKeyFor(
  ctx: UploadContext,
  path: string,
  target: 'image' | 'video',
  expect: 'image' | 'video',
): Promise<string> {
  const sha256 = await fileSha256(path);
  const id = `${sha256}/${target}`;
  let upload = ctx.inFlight.get(id);
  if (!upload) {
    upload = uploadOnce(ctx, path, sha256, target, expect).finally(() => ctx.inFlight.delete(id));
    ctx.inFlight.set(id, upload);
  }
  return upload;
}

async function uploadOnce(
  ctx: UploadContext,
  path: string,
  sha256: string,
  target: 'image' | 'video',
  expect: 'image' | 'video',
): Promise<string> {
  const [media, info] = await Promise.all([detectMedia(path), stat(path)]);
  if (media.kind !== expect)
    throw new InputError(
      `${path} is ${media.kind === 'image' ? 'an image' : 'a video'} (${media.contentType}); this input takes ${expect === 'image' ? 'an image' : 'a video'}`,
    );
  const known = ctx.store.uploads.find(ctx.keyFp, sha256, target);
  const valid = known && known.size === info.size && (known.expires_at ?? 0) > ctx.now() + ctx.validityMarginMs;
  if (valid && known.confirmed) return known.key;
  if (valid && known.upload_url) {
    // A run killed during this PUT: send the same bytes to the same grant (it overwrites; no new upload).
    try {
      await ctx.client.putUpload(
        known.upload_url,
        createReadStream(path),
        known.content_type,
        known.size,
        ctx.idleTimeoutMs,
      );
      ctx.store.uploads.confirmed(known.key);
      return known.key;
    } catch {
      // the grant's URL expired or was refused: take a new grant below
    }
  }
  const grant = await ctx.window.run(
    () => ctx.client.createUpload({ kind: media.kind, target, contentType: media.contentType, size: info.size }),
    ctx.signal,
  );
  ctx.store.uploads.granted(
    {
      keyFp: ctx.keyFp,
      sha256,
      target,
      kind: media.kind,
      contentType: media.contentType,
      size: info.size,
      key: grant.key,
      expiresAt: grant.expiresAt?.getTime() ?? null,
      uploadUrl: grant.uploadUrl,
    },
    ctx.now(),
  );
  await ctx.client.putUpload(grant.uploadUrl, createReadStream(path), media.contentType, info.size, ctx.idleTimeoutMs);
  ctx.store.uploads.confirmed(grant.key);
  return grant.key;
}
