/** Migration 17. */
export const sql = `
  -- Failed uploads of an item's inputs: each defers it, the fifth ends it, and a resumed run goes on counting.
  -- On the item, not an attempt: an attempt is made only once its inputs are uploaded.
  ALTER TABLE items ADD COLUMN upload_failures INTEGER NOT NULL DEFAULT 0;
  `;
