/** Migration 24. */
export const sql = `
  -- Web copies are outputs: with a bucket, a copy is staged and recorded, then published create-only and verified,
  -- and waits (published_at NULL) until it is. In a folder a copy is in place once written (published_at = made_at).
  -- Copies recorded before this were put or written before their record: in place.
  ALTER TABLE derivatives ADD COLUMN published_at INTEGER;
  ALTER TABLE derivatives ADD COLUMN published_to TEXT;
  ALTER TABLE derivatives ADD COLUMN publish_error TEXT;
  UPDATE derivatives SET published_at = made_at;
  CREATE INDEX derivatives_unpublished ON derivatives (made_at) WHERE published_at IS NULL;
  -- The items that ask for copies, so that counting the copies owed reads those alone (none, for most catalogs).
  CREATE INDEX items_asking_copies ON items (id) WHERE json_array_length(spec, '$.finish.derivatives') > 0;
  -- While the bucket answers nothing but faults: since when, when its calls give up, and its last fault (status).
  ALTER TABLE runs ADD COLUMN bucket_trouble_since INTEGER;
  ALTER TABLE runs ADD COLUMN bucket_gives_up_at INTEGER;
  ALTER TABLE runs ADD COLUMN bucket_trouble_code TEXT;
  `;
