/** Migration 10. */
export const sql = `
  -- The report reads the items in manifest order a page at a time (a 100,000-item report held whole took 70 MB).
  CREATE INDEX items_seq ON items (seq);
  `;
