/** Migration 22. */
export const sql = `
  -- Web copies of image outputs (derivatives): made once the output is verified, each recorded as written, so a
  -- resumed run makes only the missing ones. The original output is never modified.
  CREATE TABLE derivatives (
    job_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    path TEXT NOT NULL,
    format TEXT NOT NULL,
    width INTEGER NOT NULL,
    height INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    made_at INTEGER NOT NULL,
    PRIMARY KEY (job_id, idx, path)
  );
  -- The review server serves a copy only when its path is recorded.
  CREATE INDEX derivatives_path ON derivatives (path);
  -- Who took a review decision: a person (genbatch review), or the manifest's checks (a flat image, a wrong size).
  ALTER TABLE reviews ADD COLUMN by TEXT NOT NULL DEFAULT 'person';
  `;
