/** Migration 8. */
export const sql = `
  -- Items that wait for their time (a backoff): the feeder asks for the earliest on every pick, and
  -- through items_state that scanned every pending item of the type (100,000 in a big catalog).
  CREATE INDEX items_due ON items (state, type, not_before) WHERE not_before > 0;
  `;
