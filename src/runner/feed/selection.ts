/**
 * Whether an item is chosen by `--only`: its id is one of the ids or matched
 * by one of the globs (`*` any run of characters, `?` one character), or it
 * has one of the `tag:NAME` tags.
 */
export function selects(selectors: readonly string[]): (id: string, tags: readonly string[]) => boolean {
  const tagged = new Set(selectors.filter((s) => s.startsWith('tag:')).map((s) => s.slice(4)));
  const ids = selectors.filter((s) => !s.startsWith('tag:'));
  const exact = new Set(ids.filter((s) => !/[*?]/.test(s)));
  const globs = ids.filter((s) => /[*?]/.test(s)).map(globPattern);
  return (id, tags) => exact.has(id) || globs.some((g) => g.test(id)) || tags.some((t) => tagged.has(t));
}

function globPattern(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 's');
}
