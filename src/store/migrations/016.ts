/** Migration 16. */
export const sql = `
  -- Ready items go higher priority first, then in manifest order: the feeder reads them in this index's order,
  -- keyset-paged on (rank, seq) with rank = -priority, so that a page after items a run holds is one seek.
  ALTER TABLE items ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE items ADD COLUMN rank INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX items_ready ON items (state, type, rank, seq);
  -- The items that have tags (in their spec): status counts per tag without reading every item's spec.
  CREATE INDEX items_tagged ON items (seq) WHERE spec -> '$.tags' IS NOT NULL;
  `;
