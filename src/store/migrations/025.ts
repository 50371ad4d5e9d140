/** Migration 25. */
export const sql = `
  -- genbatch review answers every filter, count and search from an index, never a scan of the items.
  -- Search: each item's id, prompt, row values and tags, found by any piece of 3 characters or more, in any case
  -- and with or without accents (FTS5's trigram tokenizer). Contentless (the text is the items'), so it costs the
  -- state no copy of it. An item is indexed by the sync that inserts it (no per-row trigger on insert: see 11),
  -- and again by a trigger when its spec changes; its state changing (a run's every step) touches nothing here.
  CREATE VIRTUAL TABLE item_search USING fts5 (
    text, tokenize = 'trigram remove_diacritics 1', content = '', contentless_delete = 1
  );
  INSERT INTO item_search (rowid, text) SELECT rowid, id || char(10) || coalesce(spec ->> '$.prompt', '') || char(10) || coalesce((SELECT group_concat(value, char(10)) FROM json_each(spec, '$.values')), '') || char(10) || coalesce((SELECT group_concat(value, char(10)) FROM json_each(spec, '$.tags')), '') FROM items;
  CREATE TRIGGER item_search_update AFTER UPDATE OF id, spec ON items BEGIN
    DELETE FROM item_search WHERE rowid = old.rowid;
    INSERT INTO item_search (rowid, text) VALUES (new.rowid, new.id || char(10) || coalesce(new.spec ->> '$.prompt', '') || char(10) || coalesce((SELECT group_concat(value, char(10)) FROM json_each(new.spec, '$.values')), '') || char(10) || coalesce((SELECT group_concat(value, char(10)) FROM json_each(new.spec, '$.tags')), ''));
  END;
  CREATE TRIGGER item_search_delete AFTER DELETE ON items BEGIN
    DELETE FROM item_search WHERE rowid = old.rowid;
  END;

  -- Tags: each item's tags in manifest order, so a tag's cards and their count are a range of this table. Written
  -- by the sync that inserts an item, and by a trigger when its spec or place changes.
  CREATE TABLE item_tags (tag TEXT NOT NULL, seq INTEGER NOT NULL, item_rowid INTEGER NOT NULL,
    PRIMARY KEY (tag, seq, item_rowid)) WITHOUT ROWID;
  CREATE INDEX item_tags_item ON item_tags (item_rowid);
  INSERT OR IGNORE INTO item_tags SELECT j.value, i.seq, i.rowid FROM items i, json_each(i.spec, '$.tags') j
    WHERE i.spec -> '$.tags' IS NOT NULL;
  CREATE TRIGGER item_tags_update AFTER UPDATE OF spec, seq ON items BEGIN
    DELETE FROM item_tags WHERE item_rowid = old.rowid;
    INSERT OR IGNORE INTO item_tags SELECT j.value, new.seq, new.rowid FROM json_each(new.spec, '$.tags') j;
  END;
  CREATE TRIGGER item_tags_delete AFTER DELETE ON items BEGIN
    DELETE FROM item_tags WHERE item_rowid = old.rowid;
  END;

  -- The review of each item's current output: NULL (none on disk), unreviewed, approved or rejected. Kept by
  -- triggers on the outputs (a download, a new version, a file found missing) and the decisions.
  ALTER TABLE items ADD COLUMN review TEXT;
  UPDATE items SET review = (SELECT coalesce(r.decision, 'unreviewed') FROM outputs o
    LEFT JOIN reviews r ON r.item_id = o.item_id AND r.version = o.version
    WHERE o.item_id = items.id AND o.idx = 1 AND o.superseded_at IS NULL AND o.sha256 IS NOT NULL
    ORDER BY o.version DESC LIMIT 1);
  CREATE TRIGGER items_review_output AFTER INSERT ON outputs BEGIN
    UPDATE items SET review = (SELECT coalesce(r.decision, 'unreviewed') FROM outputs o
    LEFT JOIN reviews r ON r.item_id = o.item_id AND r.version = o.version
    WHERE o.item_id = new.item_id AND o.idx = 1 AND o.superseded_at IS NULL AND o.sha256 IS NOT NULL
    ORDER BY o.version DESC LIMIT 1) WHERE id = new.item_id;
  END;
  CREATE TRIGGER items_review_output_update AFTER UPDATE OF sha256, superseded_at, version, idx, item_id ON outputs BEGIN
    UPDATE items SET review = (SELECT coalesce(r.decision, 'unreviewed') FROM outputs o
    LEFT JOIN reviews r ON r.item_id = o.item_id AND r.version = o.version
    WHERE o.item_id = old.item_id AND o.idx = 1 AND o.superseded_at IS NULL AND o.sha256 IS NOT NULL
    ORDER BY o.version DESC LIMIT 1) WHERE id = old.item_id;
    UPDATE items SET review = (SELECT coalesce(r.decision, 'unreviewed') FROM outputs o
    LEFT JOIN reviews r ON r.item_id = o.item_id AND r.version = o.version
    WHERE o.item_id = new.item_id AND o.idx = 1 AND o.superseded_at IS NULL AND o.sha256 IS NOT NULL
    ORDER BY o.version DESC LIMIT 1) WHERE id = new.item_id AND new.item_id <> old.item_id;
  END;
  CREATE TRIGGER items_review_output_delete AFTER DELETE ON outputs BEGIN
    UPDATE items SET review = (SELECT coalesce(r.decision, 'unreviewed') FROM outputs o
    LEFT JOIN reviews r ON r.item_id = o.item_id AND r.version = o.version
    WHERE o.item_id = old.item_id AND o.idx = 1 AND o.superseded_at IS NULL AND o.sha256 IS NOT NULL
    ORDER BY o.version DESC LIMIT 1) WHERE id = old.item_id;
  END;
  CREATE TRIGGER items_review_decided AFTER INSERT ON reviews BEGIN
    UPDATE items SET review = (SELECT coalesce(r.decision, 'unreviewed') FROM outputs o
    LEFT JOIN reviews r ON r.item_id = o.item_id AND r.version = o.version
    WHERE o.item_id = new.item_id AND o.idx = 1 AND o.superseded_at IS NULL AND o.sha256 IS NOT NULL
    ORDER BY o.version DESC LIMIT 1) WHERE id = new.item_id;
  END;
  CREATE TRIGGER items_review_changed AFTER UPDATE ON reviews BEGIN
    UPDATE items SET review = (SELECT coalesce(r.decision, 'unreviewed') FROM outputs o
    LEFT JOIN reviews r ON r.item_id = o.item_id AND r.version = o.version
    WHERE o.item_id = new.item_id AND o.idx = 1 AND o.superseded_at IS NULL AND o.sha256 IS NOT NULL
    ORDER BY o.version DESC LIMIT 1) WHERE id = new.item_id;
  END;
  CREATE TRIGGER items_review_cleared AFTER DELETE ON reviews BEGIN
    UPDATE items SET review = (SELECT coalesce(r.decision, 'unreviewed') FROM outputs o
    LEFT JOIN reviews r ON r.item_id = o.item_id AND r.version = o.version
    WHERE o.item_id = old.item_id AND o.idx = 1 AND o.superseded_at IS NULL AND o.sha256 IS NOT NULL
    ORDER BY o.version DESC LIMIT 1) WHERE id = old.item_id;
  END;

  -- The grid's filters in manifest order, each with the removed flag first: a filter's cards and its count are a
  -- range of one index (covering for the count).
  CREATE INDEX items_grid_state ON items (removed, state, seq);
  CREATE INDEX items_grid_model ON items (removed, model, seq);
  CREATE INDEX items_grid_review ON items (removed, review, seq);
  CREATE INDEX items_grid ON items (removed, seq);
  -- The decisions the manifest's checks took (a flat frame, a wrong size): counted apart, and few.
  CREATE INDEX reviews_by_checks ON reviews (item_id, version) WHERE by = 'check';
  `;
