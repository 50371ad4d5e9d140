/** Migration 9. */
export const sql = `
  -- Items the manifest no longer has: never started, not counted in progress; a job already paid for still finishes.
  ALTER TABLE items ADD COLUMN removed INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX items_removed ON items (state) WHERE removed = 1;
  `;
