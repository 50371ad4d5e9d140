import { createHash } from 'node:crypto';
import type { SimKey } from './accounts.js';

export interface SimUpload {
  key: string;
  /** The API key that was granted it: the only one that may use it (the strictest reading of a silent spec). */
  owner: SimKey;
  kind: 'image' | 'video';
  target: 'image' | 'video';
  contentType: string;
  size: number;
  expiresAt: number;
  uploaded: boolean;
  sha256?: string;
}

export type UploadUse = { field: string; kind: 'image' | 'video'; target: 'image' | 'video' };

export class Uploads {
  readonly byKey = new Map<string, SimUpload>();

  add(upload: SimUpload): void {
    this.byKey.set(upload.key, upload);
  }

  /** Why this key cannot be used as input, or undefined when it can. */
  problem(key: unknown, owner: SimKey, use: UploadUse, now: number): string | undefined {
    if (typeof key !== 'string' || key === '') return `${use.field} must be an upload key string`;
    const upload = this.byKey.get(key);
    if (!upload || upload.owner !== owner) return `${use.field}: unknown upload key`;
    if (!upload.uploaded)
      return `${use.field}: nothing was uploaded for this key yet (PUT the file to uploadUrl first)`;
    if (now >= upload.expiresAt) return `${use.field}: the uploaded material expired; upload it again`;
    if (upload.kind !== use.kind) return `${use.field}: expected an upload of kind ${use.kind}, got ${upload.kind}`;
    if (upload.target !== use.target)
      return `${use.field}: expected an upload with target ${use.target}, got ${upload.target}`;
    return undefined;
  }

  /** Stores the PUT body; returns an error message when it does not match the grant. */
  receive(upload: SimUpload, contentType: string | undefined, body: Buffer): string | undefined {
    if (contentType !== upload.contentType) {
      return `Content-Type ${contentType ?? '(none)'} does not match the granted ${upload.contentType}`;
    }
    if (body.length !== upload.size) return `body is ${body.length} bytes; the grant says ${upload.size}`;
    upload.uploaded = true;
    upload.sha256 = createHash('sha256').update(body).digest('hex');
    return undefined;
  }
}
