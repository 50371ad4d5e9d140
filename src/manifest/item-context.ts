import type { TemplateContext } from './templates.js';

/** The item's own fields, which a template may name once they are known: they win over every other value. */
type ItemField = 'type' | 'model' | 'aspectRatio' | 'resolution' | 'duration' | 'id';
const ITEM_FIELDS: readonly ItemField[] = ['type', 'model', 'aspectRatio', 'resolution', 'duration', 'id'];

/**
 * What one item's templates read, looked up in layers rather than copied into
 * a map per item (a catalog has 100,000 rows): the item's fields, then its
 * matrix values, then its row's columns, then the manifest's vars.
 */
export class ItemContext implements TemplateContext {
  private readonly fields: Partial<Record<ItemField, string>> = {};

  constructor(
    private readonly vars: ReadonlyMap<string, string>,
    private readonly row: Readonly<Record<string, string>> | undefined,
    private readonly combo: ReadonlyMap<string, string>,
  ) {}

  set(name: ItemField, value: string): void {
    this.fields[name] = value;
  }

  get(name: string): string | undefined {
    const field = Object.hasOwn(this.fields, name) ? this.fields[name as ItemField] : undefined;
    if (field !== undefined) return field;
    const matrix = this.combo.get(name);
    if (matrix !== undefined) return matrix;
    if (this.row && Object.hasOwn(this.row, name)) return this.row[name];
    return this.vars.get(name);
  }

  keys(): MapIterator<string> {
    const names = new Set(this.vars.keys());
    for (const name in this.row) names.add(name);
    for (const name of this.combo.keys()) names.add(name);
    for (const name of ITEM_FIELDS) if (this.fields[name] !== undefined) names.add(name);
    return names.keys();
  }
}
