/** Migration 15. */
export const sql = `
  -- Since when the service has answered nothing, while a run waits for it: status says why a run is quiet.
  ALTER TABLE runs ADD COLUMN unreachable_since INTEGER;
  -- The one retry a 503 allows, counted apart from the resends after no answer (which must not use it up).
  ALTER TABLE attempts ADD COLUMN unavailable_resends INTEGER NOT NULL DEFAULT 0;
  `;
