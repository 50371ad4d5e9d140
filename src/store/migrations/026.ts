/** Migration 26. */
export const sql = `
  -- Gates (the manifest's approved): an item is sent only once a person approved each gate's current version.
  CREATE TABLE gates (
    item_id TEXT NOT NULL,
    gate_id TEXT NOT NULL,
    PRIMARY KEY (item_id, gate_id)
  ) WITHOUT ROWID;
  CREATE INDEX gates_gate ON gates (gate_id, item_id);

  -- A gate made, decided, undecided or made again (its state or its current version's review written, by any process):
  -- each item it gates that was not sent goes where its gates put it. Skipped while one gate's current version is
  -- rejected (the reason names it), waiting while one is not done and approved, else pending. What was sent is never
  -- touched. A sync that writes new gated items touches their gates' review to settle them (Gates.settleAll).
  CREATE TRIGGER gate_moved AFTER UPDATE OF state, review ON items
    WHEN EXISTS (SELECT 1 FROM gates WHERE gate_id = new.id)
  BEGIN
    UPDATE items SET
      state = CASE WHEN s.rejected IS NOT NULL THEN 'skipped' WHEN s.open IS NOT NULL THEN 'waiting' ELSE 'pending' END,
      error_code = CASE WHEN s.rejected IS NOT NULL THEN 'GATE_REJECTED'
        WHEN items.error_code = 'GATE_REJECTED' THEN NULL ELSE items.error_code END,
      error_message = CASE WHEN s.rejected IS NOT NULL THEN 'its gate ' || s.rejected || ' was rejected in review: it is not sent'
        WHEN items.error_code = 'GATE_REJECTED' THEN NULL ELSE items.error_message END
    FROM (
      SELECT d.item_id,
        (SELECT g.gate_id FROM gates g JOIN items gi ON gi.id = g.gate_id
          WHERE g.item_id = d.item_id AND gi.state = 'done' AND gi.review = 'rejected' LIMIT 1) AS rejected,
        (SELECT g.gate_id FROM gates g JOIN items gi ON gi.id = g.gate_id
          WHERE g.item_id = d.item_id AND (gi.state IS NOT 'done' OR gi.review IS NOT 'approved') LIMIT 1) AS open
      FROM gates d WHERE d.gate_id = new.id
    ) AS s
    WHERE items.id = s.item_id
      AND (items.state IN ('pending', 'waiting') OR (items.state = 'skipped' AND items.error_code = 'GATE_REJECTED'));
  END;
`;
