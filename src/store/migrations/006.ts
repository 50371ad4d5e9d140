/** Migration 6: each output's modification time when verified, so a resume rehashes only the files that changed since. */
export const sql = `
  ALTER TABLE outputs ADD COLUMN mtime_ms INTEGER;
  `;
