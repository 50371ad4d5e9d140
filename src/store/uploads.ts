import type { Db } from './db.js';

export interface UploadRow {
  /** The API key it was granted to, by fingerprint: another key may not be able to use it. */
  key_fp: string;
  sha256: string;
  target: 'image' | 'video';
  kind: 'image' | 'video';
  content_type: string;
  size: number;
  key: string;
  expires_at: number | null;
  created_at: number;
  upload_url: string | null;
  /** 0 while the PUT may not have finished. */
  confirmed: number;
}

/** Upload keys by API key, file content and target, so the same bytes are not uploaded twice while valid. */
export class Uploads {
  private readonly getStmt;
  private readonly putStmt;
  private readonly confirmStmt;
  private readonly forgetStmt;

  constructor(db: Db) {
    this.getStmt = db.prepare<[string, string, string], UploadRow>(
      'SELECT * FROM uploads WHERE key_fp = ? AND sha256 = ? AND target = ?',
    );
    this.putStmt = db.prepare(
      'INSERT INTO uploads (key_fp, sha256, target, kind, content_type, size, key, expires_at, created_at, upload_url, confirmed) VALUES (@keyFp, @sha256, @target, @kind, @contentType, @size, @key, @expiresAt, @now, @uploadUrl, 0) ON CONFLICT (key_fp, sha256, target) DO UPDATE SET key = @key, expires_at = @expiresAt, created_at = @now, content_type = @contentType, size = @size, kind = @kind, upload_url = @uploadUrl, confirmed = 0',
    );
    this.confirmStmt = db.prepare('UPDATE uploads SET confirmed = 1 WHERE key = ?');
    this.forgetStmt = db.prepare('DELETE FROM uploads WHERE key = ?');
  }

  find(keyFp: string, sha256: string, target: 'image' | 'video'): UploadRow | undefined {
    return this.getStmt.get(keyFp, sha256, target);
  }

  /** A grant, recorded before its PUT. */
  granted(
    u: {
      keyFp: string;
      sha256: string;
      target: 'image' | 'video';
      kind: 'image' | 'video';
      contentType: string;
      size: number;
      key: string;
      expiresAt: number | null;
      uploadUrl: string;
    },
    now: number,
  ): void {
    this.putStmt.run({ ...u, now });
  }

  /** The service refused the key: the bytes will be uploaded again. */
  forget(key: string): void {
    this.forgetStmt.run(key);
  }

  /** Its PUT finished. */
  confirmed(key: string): void {
    this.confirmStmt.run(key);
  }
}
