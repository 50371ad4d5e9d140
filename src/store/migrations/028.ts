/** Migration 28. */
export const sql = `
  -- A decision binds until the moment of sending: a queued item (its attempt saved, never sent) is taken back by a
  -- rejection, a cleared decision or a gate made again, like a pending one. An approved gate leaves a queued item
  -- queued. A gate skipped by its approval timeout says so, not "rejected in review". The trigger follows a gate's
  -- state (made again, an output gone); a decision (a gate's review) settles what it gates itself, with the same
  -- rule in one statement for every gate it decides (Gates.settle): row by row, a bulk approval of 10,000 gates
  -- took 5 s in this trigger.
  DROP TRIGGER gate_moved;
  CREATE TRIGGER gate_moved AFTER UPDATE OF state ON items
    WHEN EXISTS (SELECT 1 FROM gates WHERE gate_id = new.id)
  BEGIN
    UPDATE items SET
      state = CASE WHEN s.rejected IS NOT NULL THEN 'skipped' WHEN s.open IS NOT NULL THEN 'waiting'
        WHEN items.state = 'queued' THEN 'queued' ELSE 'pending' END,
      error_code = CASE WHEN s.rejected IS NOT NULL THEN 'GATE_REJECTED'
        WHEN items.error_code = 'GATE_REJECTED' THEN NULL ELSE items.error_code END,
      error_message = CASE WHEN s.rejected IS NOT NULL THEN 'its gate ' || s.rejected || CASE WHEN EXISTS (
          SELECT 1 FROM reviews r JOIN outputs o ON o.item_id = r.item_id AND o.version = r.version AND o.idx = 1
            AND o.superseded_at IS NULL WHERE r.item_id = s.rejected AND r.by = 'timeout')
          THEN ' was not decided within its approval timeout, which skips what it gates: it is not sent'
          ELSE ' was rejected in review: it is not sent' END
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
      AND (items.state IN ('pending', 'queued', 'waiting')
        OR (items.state = 'skipped' AND items.error_code = 'GATE_REJECTED'));
  END;

  -- The decision record: every decision on a gate or an output, kept, never overwritten (reviews holds each
  -- version's current decision). by: a person's name, "timeout" for an approval timeout's, "unknown" for those
  -- recorded before this table. What it moved, as item ids (JSON arrays), and their credits (a JSON object).
  CREATE TABLE decisions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    decision TEXT NOT NULL CHECK (decision IN ('approved', 'rejected', 'cleared')),
    note TEXT,
    by TEXT NOT NULL,
    at INTEGER NOT NULL,
    by_timeout INTEGER NOT NULL DEFAULT 0,
    unlocked TEXT NOT NULL DEFAULT '[]',
    skipped TEXT NOT NULL DEFAULT '[]',
    taken_back TEXT NOT NULL DEFAULT '[]',
    sent_before TEXT NOT NULL DEFAULT '[]',
    credits TEXT NOT NULL DEFAULT '{}'
  );
  CREATE INDEX decisions_item ON decisions (item_id, version, seq);
  CREATE TRIGGER decisions_kept BEFORE UPDATE ON decisions
  BEGIN SELECT RAISE(ABORT, 'the decision record is kept as written'); END;
  CREATE TRIGGER decisions_kept_whole BEFORE DELETE ON decisions
  BEGIN SELECT RAISE(ABORT, 'the decision record is kept as written'); END;
  INSERT INTO decisions (item_id, version, decision, note, by, at, by_timeout)
    SELECT item_id, version, decision, note, CASE WHEN by = 'timeout' THEN 'timeout' ELSE 'unknown' END, decided_at,
      by = 'timeout'
    FROM reviews WHERE by <> 'check' ORDER BY decided_at;
`;
