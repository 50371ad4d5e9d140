/** Migration 2: a grant is recorded before its PUT, so a resumed run re-PUTs to it instead of uploading anew. */
export const sql = `
  ALTER TABLE uploads ADD COLUMN upload_url TEXT;
  ALTER TABLE uploads ADD COLUMN confirmed INTEGER NOT NULL DEFAULT 1;
  `;
