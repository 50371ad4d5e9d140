/** Migration 7: running tallies kept by triggers, so the live line, the ETA and the budget read a few rows instead of scanning 100,000 items and their attempts. */
export const sql = `
  CREATE TABLE item_tally (
    type TEXT NOT NULL,
    state TEXT NOT NULL,
    -- 1 once the item was ever submitted (attempt > 0)
    attempted INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (type, state, attempted)
  ) WITHOUT ROWID;
  INSERT INTO item_tally SELECT type, state, attempt > 0, count(*) FROM items GROUP BY 1, 2, 3;
  CREATE TRIGGER item_tally_insert AFTER INSERT ON items BEGIN
    INSERT INTO item_tally VALUES (new.type, new.state, new.attempt > 0, 1) ON CONFLICT DO UPDATE SET n = n + 1;
  END;
  CREATE TRIGGER item_tally_update AFTER UPDATE OF type, state, attempt ON items
    WHEN old.type IS NOT new.type OR old.state IS NOT new.state OR (old.attempt > 0) IS NOT (new.attempt > 0) BEGIN
    UPDATE item_tally SET n = n - 1 WHERE type = old.type AND state = old.state AND attempted = (old.attempt > 0);
    INSERT INTO item_tally VALUES (new.type, new.state, new.attempt > 0, 1) ON CONFLICT DO UPDATE SET n = n + 1;
  END;
  CREATE TRIGGER item_tally_delete AFTER DELETE ON items BEGIN
    UPDATE item_tally SET n = n - 1 WHERE type = old.type AND state = old.state AND attempted = (old.attempt > 0);
  END;

  CREATE TABLE attempt_totals (id INTEGER PRIMARY KEY CHECK (id = 1), charged INTEGER NOT NULL, refunded INTEGER NOT NULL);
  INSERT INTO attempt_totals SELECT 1, coalesce(sum(charged), 0), coalesce(sum(refunded), 0) FROM attempts;
  CREATE TRIGGER attempt_totals_insert AFTER INSERT ON attempts BEGIN
    UPDATE attempt_totals SET charged = charged + new.charged, refunded = refunded + new.refunded;
  END;
  CREATE TRIGGER attempt_totals_update AFTER UPDATE OF charged, refunded ON attempts BEGIN
    UPDATE attempt_totals SET charged = charged - old.charged + new.charged, refunded = refunded - old.refunded + new.refunded;
  END;
  CREATE TRIGGER attempt_totals_delete AFTER DELETE ON attempts BEGIN
    UPDATE attempt_totals SET charged = charged - old.charged, refunded = refunded - old.refunded;
  END;

  -- Items finished since a run started, for the ETA's observed pace: a range of the index, not a scan.
  CREATE INDEX items_finished ON items (state, updated_at);
  `;
