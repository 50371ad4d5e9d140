/** Migration 29. */
export const sql = `
  -- No trigger moves an item: a gate made or unmade settles what it gates in the machine's own move (Lifecycle,
  -- store/lifecycle.ts), in the move's transaction, as a decision does. Triggers keep derived data only (tallies,
  -- search, credits, each item's review).
  DROP TRIGGER gate_moved;
`;
