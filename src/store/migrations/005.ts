/** Migration 5: resends of an attempt waiting for their time without holding an in-flight slot (items.not_before): counted across tasks and runs. */
export const sql = `
  ALTER TABLE attempts ADD COLUMN resends INTEGER NOT NULL DEFAULT 0;
  `;
