/** Migration 19. */
export const sql = `
  -- Review decisions (genbatch review): one per version of an item's outputs, kept across regenerations.
  CREATE TABLE reviews (
    item_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    decision TEXT NOT NULL CHECK (decision IN ('approved', 'rejected')),
    note TEXT,
    decided_at INTEGER NOT NULL,
    PRIMARY KEY (item_id, version)
  );
  -- The outputs of an item's version, found by (item, version) when a review joins its current one.
  CREATE INDEX outputs_item_version ON outputs (item_id, version);
  -- The review app's live view asks for the outputs downloaded since it last looked.
  CREATE INDEX outputs_downloaded ON outputs (downloaded_at) WHERE downloaded_at IS NOT NULL;
  `;
