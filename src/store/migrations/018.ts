/** Migration 18. */
export const sql = `
  -- Paid outputs are never overwritten: a regenerated item's new job saves version 2 beside version 1, and the
  -- earlier job's rows stay, marked superseded, so the results list every version and say which is current.
  ALTER TABLE outputs ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE outputs ADD COLUMN superseded_at INTEGER;
  `;
