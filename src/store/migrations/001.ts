/** Migration 1: the first schema: meta, items, attempts, outputs, submissions, daily credits, blocks, uploads. */
export const sql = `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

  -- The item is a row with a life: state, attempt, last error, next time to act.
  CREATE TABLE items (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    model TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    spec TEXT NOT NULL,
    state TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    changed INTEGER NOT NULL DEFAULT 0,
    error_code TEXT,
    error_message TEXT,
    not_before INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX items_state ON items (state, type, seq);

  -- One row per submission attempt; its key is committed before the request leaves.
  CREATE TABLE attempts (
    item_id TEXT NOT NULL REFERENCES items (id),
    n INTEGER NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL,
    status TEXT NOT NULL,
    job_id TEXT,
    charged INTEGER NOT NULL DEFAULT 0,
    refunded INTEGER NOT NULL DEFAULT 0,
    error_code TEXT,
    error_message TEXT,
    created_at INTEGER NOT NULL,
    sent_at INTEGER,
    accepted_at INTEGER,
    ended_at INTEGER,
    PRIMARY KEY (item_id, n)
  );
  CREATE INDEX attempts_job ON attempts (job_id);

  CREATE TABLE outputs (
    job_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    item_id TEXT NOT NULL REFERENCES items (id),
    path TEXT,
    bytes INTEGER,
    sha256 TEXT,
    content_type TEXT,
    link_issued_at INTEGER,
    downloaded_at INTEGER,
    PRIMARY KEY (job_id, idx)
  );

  -- When submissions were sent: read back to pace the first submissions after a restart.
  CREATE TABLE submissions (at INTEGER NOT NULL);
  -- Credits per key day, for the daily cap.
  CREATE TABLE daily_credits (day INTEGER PRIMARY KEY, charged INTEGER NOT NULL DEFAULT 0, refunded INTEGER NOT NULL DEFAULT 0);
  -- Blocked submissions, for the moderation circuit breaker's trailing 7 days.
  CREATE TABLE blocks (at INTEGER NOT NULL, item_id TEXT NOT NULL);
  -- Uploaded inputs, reused for the same bytes and target while still valid.
  CREATE TABLE uploads (
    sha256 TEXT NOT NULL,
    target TEXT NOT NULL,
    kind TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size INTEGER NOT NULL,
    key TEXT NOT NULL,
    expires_at INTEGER,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (sha256, target)
  );
  `;
