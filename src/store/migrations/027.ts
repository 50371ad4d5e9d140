/** Migration 27. */
export const sql = `
  -- Which version of each earlier item's output an attempt was made from ({ "item-id": version }), where it took
  -- one: a dependent made from a version since replaced (a draft made again) is changed, and --redo-changed
  -- makes it again.
  ALTER TABLE attempts ADD COLUMN inputs TEXT;
  CREATE INDEX attempts_inputs ON attempts (item_id, n) WHERE inputs IS NOT NULL;
`;
