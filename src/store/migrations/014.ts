/** Migration 14. */
export const sql = `
  -- Items a sync found changed since they were sent: every run asks for them, and without this it read all
  -- 100,000 rows of a big catalog to find none.
  CREATE INDEX items_changed ON items (seq) WHERE changed = 1;
  `;
