/**
 * What search finds an item by: its id, prompt, row values and tags, one
 * per line (`row`: `new.`, `i.` or ''). Migration 25 built the search index
 * from this text, frozen as it was then; a search that scans (a phrase the
 * index cannot answer) must read the same text, and a test holds the two
 * together.
 */
export function searchText(row: string): string {
  const list = (path: string) =>
    `coalesce((SELECT group_concat(value, char(10)) FROM json_each(${row}spec, '${path}')), '')`;
  return `${row}id || char(10) || coalesce(${row}spec ->> '$.prompt', '') || char(10) || ${list('$.values')} || char(10) || ${list('$.tags')}`;
}
