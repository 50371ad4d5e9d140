import { templateNames } from './templates.js';
import type { IssueList } from './issues.js';
import { outputRelativePath, defaultExtension } from './output-paths.js';
import { type ManifestSource, fieldPath } from './source.js';
import { dependenciesOf, type ResolvedItem } from './types.js';

/** Rules across items: unique ids, references that exist and fit, no cycles, distinct output files. */
export function checkAcrossItems(items: readonly ResolvedItem[], source: ManifestSource, outputName: string, vars: ReadonlyMap<string, string>, issues: IssueList, invalidIds: ReadonlySet<string> = new Set()): void {
  const byId = new Map<string, ResolvedItem>();
  const at = (item: ResolvedItem, field: string) => {
    const root = field.replace(/\[\d+\]$/, '');
    const index = /\[(\d+)\]$/.exec(field)?.[1];
    const path = ['items', item.where.itemIndex, root, ...(index !== undefined ? [Number(index)] : [])];
    const pos = source.locate(path);
    const row = item.where.row ? ` (row at ${item.where.row.file}:${item.where.row.line})` : '';
    return { file: source.file, ...pos, field: fieldPath(path), row };
  };
  const where = (item: ResolvedItem) => `${item.where.row ? `${item.where.row.file}:${item.where.row.line}` : `${item.where.file}:${item.where.line}`}`;

  for (const item of items) {
    const first = byId.get(item.id);
    if (first) {
      const loc = at(item, 'id');
      issues.add({ ...loc, message: `duplicate id ${JSON.stringify(item.id)}: ids must be unique after expansion (first at ${where(first)})${loc.row}` });
    } else byId.set(item.id, item);
  }

  const graph = new Map<string, string[]>();
  for (const item of items) {
    const deps = dependenciesOf(item);
    if (deps.length) graph.set(item.id, deps.map((d) => d.id));
    for (const dep of deps) {
      const target = byId.get(dep.id);
      if (target && target.type === dep.needs && dep.id !== item.id) continue;
      const loc = at(item, dep.field);
      if (!target) {
        if (!invalidIds.has(dep.id)) issues.add({ ...loc, message: `no item has the id ${JSON.stringify(dep.id)}${loc.row}` });
      }
      else if (target.type !== dep.needs) issues.add({ ...loc, message: `expected ${dep.needs === 'image' ? 'an image' : 'a video'} item, found ${JSON.stringify(dep.id)}, ${target.type === 'image' ? 'an image' : 'a video'} item${loc.row}` });
      else if (dep.id === item.id) issues.add({ ...loc, message: `an item cannot take its own output${loc.row}` });
    }
  }
  for (const cycle of findCycles(graph)) {
    const item = byId.get(cycle[0]!)!;
    const loc = at(item, 'id');
    issues.add({ ...loc, message: `a dependency cycle: ${[...cycle, cycle[0]].join(' → ')}` });
  }

  // Without {{n}} a job's later outputs get a -n suffix, which can meet another item's name: check the first few.
  const outputsChecked = templateNames(outputName).includes('n') ? 1 : OUTPUTS_CHECKED;
  // Which item and output took each file, as one number (item index × outputs checked + n - 1): no object per item.
  const files = new Map<string, number>();
  const named = (id: string, n: number) => `${JSON.stringify(id)}${n > 1 ? ` (its output ${n})` : ''}`;
  for (let index = 0; index < items.length; index++) {
    const item = items[index]!;
    // Located only when there is something to say: finding a node in a big YAML file is the costly part.
    const loc = () => at(item, 'id');
    for (let n = 1; n <= outputsChecked; n++) {
      const out = outputRelativePath(outputName, { id: item.id, n, ext: defaultExtension(item.type), model: item.model, type: item.type, vars });
      if (!out.ok) {
        const l = loc();
        issues.add({ ...l, message: `${out.message}${l.row}` });
        break;
      }
      const key = out.path.toLowerCase(); // case-insensitive file systems would merge these
      const taken = files.get(key);
      const other = taken === undefined ? undefined : { id: items[Math.floor(taken / outputsChecked)]!.id, n: (taken % outputsChecked) + 1 };
      if (other !== undefined && other.id !== item.id) {
        const hint = outputsChecked > 1 ? '; put {{n}} in output.name (as in the default "{{id}}-{{n}}.{{ext}}")' : '';
        const l = loc();
        issues.add({ ...l, message: `items ${named(other.id, other.n)} and ${named(item.id, n)} would write the same file ${out.path}${hint}${l.row}` });
        break;
      }
      files.set(key, index * outputsChecked + n - 1);
    }
  }
}

/** Outputs per job whose names are checked for collisions when output.name has no {{n}}. */
const OUTPUTS_CHECKED = 4;

/** Cycles in a dependency graph (iterative DFS), each reported once. */
function findCycles(graph: ReadonlyMap<string, string[]>): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const cycles: string[][] = [];
  for (const start of graph.keys()) {
    if (state.has(start)) continue;
    const stack: { id: string; next: number }[] = [{ id: start, next: 0 }];
    state.set(start, 'open');
    while (stack.length) {
      const top = stack[stack.length - 1]!;
      const deps = graph.get(top.id) ?? [];
      if (top.next >= deps.length) {
        state.set(top.id, 'done');
        stack.pop();
        continue;
      }
      const dep = deps[top.next++]!;
      if (state.get(dep) === 'open') {
        const from = stack.findIndex((f) => f.id === dep);
        if (dep !== top.id) cycles.push(stack.slice(from).map((f) => f.id));
      } else if (!state.has(dep)) {
        state.set(dep, 'open');
        stack.push({ id: dep, next: 0 });
      }
    }
  }
  return cycles;
}
