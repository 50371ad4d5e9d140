/** Migration 13. */
export const sql = `
  -- Several keys: each paces its own submissions, keeps its own daily cap and its own uploads (an upload
  -- key may be usable only by the API key it was granted to). Rows from before are the key '' (unknown),
  -- which every key's cap counts: never under-counted.
  ALTER TABLE submissions ADD COLUMN key_fp TEXT NOT NULL DEFAULT '';
  CREATE INDEX submissions_at ON submissions (at);
  CREATE TABLE key_day_credits (
    key_fp TEXT NOT NULL,
    day INTEGER NOT NULL,
    charged INTEGER NOT NULL DEFAULT 0,
    refunded INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (key_fp, day)
  ) WITHOUT ROWID;
  INSERT INTO key_day_credits SELECT '', day, charged, refunded FROM daily_credits;
  DROP TABLE daily_credits;
  CREATE TABLE key_uploads (
    key_fp TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    target TEXT NOT NULL,
    kind TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size INTEGER NOT NULL,
    key TEXT NOT NULL,
    expires_at INTEGER,
    created_at INTEGER NOT NULL,
    upload_url TEXT,
    confirmed INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (key_fp, sha256, target)
  );
  INSERT INTO key_uploads SELECT '', sha256, target, kind, content_type, size, key, expires_at, created_at, upload_url, confirmed FROM uploads;
  DROP TABLE uploads;
  ALTER TABLE key_uploads RENAME TO uploads;
  `;
