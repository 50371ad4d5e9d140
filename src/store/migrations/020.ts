/** Migration 20. */
export const sql = `
  -- Transfers that went silent (status names them while the run waits for them), and the idle timeout that ends each.
  ALTER TABLE runs ADD COLUMN stalled_transfers INTEGER;
  ALTER TABLE runs ADD COLUMN stalled_since INTEGER;
  ALTER TABLE runs ADD COLUMN idle_timeout_ms INTEGER;
  `;
