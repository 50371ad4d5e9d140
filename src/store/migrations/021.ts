/** Migration 21. */
export const sql = `
  -- Outputs published to a bucket (--out s3://...): verified there, then recorded, and only then is the local copy
  -- removed. An output saved but not published waits in the staging folder for this run or the next one.
  ALTER TABLE outputs ADD COLUMN published_at INTEGER;
  ALTER TABLE outputs ADD COLUMN published_to TEXT;
  ALTER TABLE outputs ADD COLUMN publish_error TEXT;
  CREATE INDEX outputs_unpublished ON outputs (downloaded_at) WHERE published_at IS NULL AND sha256 IS NOT NULL;
  `;
