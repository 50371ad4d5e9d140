import { templateNames } from './templates.js';
import type { IssueList } from './issues.js';
import {
  DEFAULT_OUTPUT_NAME,
  MAX_SEGMENT_BYTES,
  outputRelativePath,
  defaultExtension,
  safeFileValue,
} from './output-paths.js';
import { type ManifestSource, fieldPath } from './source.js';
import { dependenciesOf, type ItemOrigin, type ResolvedItem } from './types.js';

/** An item another waits for: its output (`needs` its type) or, a gate, a person's decision on it (any type). */
type Dependency = { id: string; field: string; needs: 'image' | 'video' | 'any' };

/**
 * The rules across items (unique ids, references that exist and fit, no
 * cycles, distinct output files), checked as the items come, in manifest order:
 * duplicate ids and output files at once, references and cycles at the end.
 * Of each item it keeps what a later message may name (its id, type and
 * where it was written, as numbers), not the item: a 100,000-row catalog is
 * checked without holding its items.
 */
export class AcrossItems {
  /** Each id's first item (any output name but the default). */
  private readonly seqById = new Map<string, number>();
  /**
   * With the default output name an item's first file is `<id>-1.<ext>`, made
   * safe and compared in lower case: two items' files meet exactly when their
   * ids, so folded, and their types do. One map keyed by the folded id then
   * finds both duplicate ids and shared files (half the work of two, on
   * 100,000 items); the rare ids that fold alike are listed in `clashes`.
   */
  private readonly byFoldedId: Map<string, number> | undefined;
  private readonly clashes = new Map<string, number[]>();
  /** By the order items came in: each one's id, type (0 image, 1 video), manifest item and row line (0 for none). */
  readonly ids: string[] = [];
  private readonly videos: number[] = [];
  private readonly itemIndexes: number[] = [];
  private readonly rowLines: number[] = [];
  /** Per manifest item: its line, and its rows file when it has one. */
  private readonly itemPlaces = new Map<number, { line: number; rowsFile: string | undefined }>();
  private lastItemIndex = -1;
  /** The items that name other items, with their references: checked once every id is known. */
  private readonly dependents: { id: string; where: ItemOrigin; deps: Dependency[] }[] = [];
  /** Which item and output took each file, as one number (item seq × outputs checked + n - 1). */
  private readonly files = new Map<string, number>();
  private readonly outputsChecked: number;
  /** Every item named as a gate. */
  private readonly gateIds = new Set<string>();
  /** Per manifest item that sets its own `approval`: the ids it expanded to, and the gates of its first. */
  private readonly ownApproval = new Map<number, { where: ItemOrigin; ids: string[]; gates: string[] }>();

  constructor(
    private readonly source: ManifestSource,
    private readonly outputName: string,
    private readonly vars: ReadonlyMap<string, string>,
    private readonly issues: IssueList,
    /** Whether the manifest item at this index sets `approval` itself (not through defaults or the top level). */
    private readonly setsApproval: (itemIndex: number) => boolean = () => false,
  ) {
    // Without {{n}} a job's later outputs get a -n suffix, which can meet another item's name: check the first few.
    this.outputsChecked = templateNames(outputName).includes('n') ? 1 : OUTPUTS_CHECKED;
    if (outputName === DEFAULT_OUTPUT_NAME) this.byFoldedId = new Map();
  }

  add(item: ResolvedItem): void {
    const seq = this.ids.length;
    const { where } = item;
    this.ids.push(item.id);
    this.videos.push(item.type === 'video' ? 1 : 0);
    this.itemIndexes.push(where.itemIndex);
    this.rowLines.push(where.row?.line ?? 0);
    // Asked when the manifest item changes, not for each of its rows.
    if (where.itemIndex !== this.lastItemIndex && !this.itemPlaces.has(where.itemIndex))
      this.itemPlaces.set(where.itemIndex, { line: where.line, rowsFile: where.row?.file });
    this.lastItemIndex = where.itemIndex;

    if (this.byFoldedId) this.addByFoldedId(item, seq, this.byFoldedId);
    else {
      const first = this.seqById.get(item.id);
      if (first !== undefined) this.duplicate(item, first);
      else this.seqById.set(item.id, seq);
      this.checkOutputFiles(item, seq);
    }
    const deps: Dependency[] = dependenciesOf(item);
    // A gate named by an input is checked as that input; one named in `approved` takes any item.
    for (const gate of item.gates ?? [])
      if (gate.field.startsWith('approved')) deps.push({ id: gate.id, field: gate.field, needs: 'any' });
    if (deps.length) this.dependents.push({ id: item.id, where, deps });
    for (const gate of item.gates ?? []) this.gateIds.add(gate.id);
    if (this.setsApproval(where.itemIndex)) {
      let own = this.ownApproval.get(where.itemIndex);
      if (!own)
        this.ownApproval.set(
          where.itemIndex,
          (own = { where, ids: [], gates: [...new Set((item.gates ?? []).map((g) => g.id))] }),
        );
      own.ids.push(item.id);
    }
  }

  private addByFoldedId(item: ResolvedItem, seq: number, byFoldedId: Map<string, number>): void {
    const key = foldedId(item.id);
    const first = byFoldedId.get(key);
    // Only a long id can make a file name too long (at most 3 bytes a character).
    if (item.id.length > MAX_SEGMENT_BYTES / 3 - 8) this.checkOutputFiles(item, seq, false);
    if (first === undefined) {
      byFoldedId.set(key, seq);
      return;
    }
    let alike = this.clashes.get(key);
    if (!alike) this.clashes.set(key, (alike = []));
    const earlier = [first, ...alike];
    const same = earlier.find((j) => this.ids[j] === item.id);
    const video = item.type === 'video' ? 1 : 0;
    const sharing = earlier.find((j) => this.videos[j] === video);
    if (same !== undefined) this.duplicate(item, same);
    else if (sharing !== undefined) {
      const out = outputRelativePath(this.outputName, {
        id: item.id,
        n: 1,
        ext: defaultExtension(item.type),
        model: item.model,
        type: item.type,
        vars: this.vars,
      });
      const l = this.at(item.where, 'id');
      if (out.ok)
        this.issues.add({
          ...l,
          message: `items ${JSON.stringify(this.ids[sharing])} and ${JSON.stringify(item.id)} would write the same file ${out.path}`,
        });
    }
    alike.push(seq);
  }

  private duplicate(item: ResolvedItem, first: number): void {
    const loc = this.at(item.where, 'id');
    this.issues.add({
      ...loc,
      message: `duplicate id ${JSON.stringify(item.id)}: ids must be unique after expansion (first at ${this.placeOf(first)})`,
    });
  }

  /** The first item with this exact id. */
  private seqOf(id: string): number | undefined {
    if (!this.byFoldedId) return this.seqById.get(id);
    const key = foldedId(id);
    const first = this.byFoldedId.get(key);
    if (first === undefined) return undefined;
    return [first, ...(this.clashes.get(key) ?? [])].find((j) => this.ids[j] === id);
  }

  /**
   * What can only be judged once every item is in: references and cycles. `invalidIds`: items whose own errors were
   * reported; `everyId`: false when items the schema refused were left out, so an id not met may be one of theirs.
   */
  finish(invalidIds: ReadonlySet<string>, everyId = true): void {
    for (const { id, where, deps } of this.dependents) {
      for (const dep of deps) {
        const target = this.seqOf(dep.id);
        const targetType = target === undefined ? undefined : this.videos[target] ? 'video' : 'image';
        if ((dep.needs === 'any' ? targetType !== undefined : targetType === dep.needs) && dep.id !== id) continue;
        const loc = this.at(where, dep.field);
        if (targetType === undefined) {
          if (everyId && !invalidIds.has(dep.id))
            this.issues.add({ ...loc, message: `no item has the id ${JSON.stringify(dep.id)}` });
        } else if (dep.needs !== 'any' && targetType !== dep.needs)
          this.issues.add({
            ...loc,
            message: `expected ${dep.needs === 'image' ? 'an image' : 'a video'} item, found ${JSON.stringify(dep.id)}, ${targetType === 'image' ? 'an image' : 'a video'} item`,
          });
        else if (dep.needs === 'any') this.issues.add({ ...loc, message: 'an item cannot be its own gate' });
        else this.issues.add({ ...loc, message: `an item cannot take its own output` });
      }
    }
    this.checkOwnApprovals();
    const graph = new Map(this.dependents.map(({ id, deps }) => [id, deps.map((d) => d.id)]));
    const whereOf = new Map<string, ItemOrigin>();
    for (const { id, where } of this.dependents) if (!whereOf.has(id)) whereOf.set(id, where);
    for (const cycle of findCycles(graph)) {
      const loc = this.at(whereOf.get(cycle[0]!)!, 'id');
      this.issues.add({ ...loc, message: `a dependency cycle: ${[...cycle, cycle[0]].join(' → ')}` });
    }
  }

  /**
   * `approval` applies to an item as a gate: set on an item that gates nothing, it would be ignored and a run
   * waiting for decisions would wait for ever. Said where it is, with the items where it would belong.
   */
  private checkOwnApprovals(): void {
    for (const { where, ids, gates } of this.ownApproval.values()) {
      if (ids.some((id) => this.gateIds.has(id))) continue;
      const named =
        ids.length === 1
          ? JSON.stringify(ids[0])
          : `${JSON.stringify(ids[0])} (and the other ${ids.length - 1} of this entry)`;
      const belongs = gates.length
        ? `put it on the items that gate it (${gates.map((g) => JSON.stringify(g)).join(', ')}), or in defaults for every gate`
        : 'put it on the items that are gates, or in defaults for every gate';
      this.issues.add({
        ...this.at(where, 'approval'),
        message: `approval applies to an item as a gate, and no item waits for ${named}: ${belongs}`,
      });
    }
  }

  /** The item's first outputs' names: valid, and no other item's (`shared` false: valid only). */
  private checkOutputFiles(item: ResolvedItem, seq: number, shared = true): void {
    const { outputsChecked } = this;
    const named = (id: string, n: number) => `${JSON.stringify(id)}${n > 1 ? ` (its output ${n})` : ''}`;
    for (let n = 1; n <= outputsChecked; n++) {
      const out = outputRelativePath(this.outputName, {
        id: item.id,
        n,
        ext: defaultExtension(item.type),
        model: item.model,
        type: item.type,
        vars: this.vars,
      });
      if (!out.ok) {
        const l = this.at(item.where, 'id');
        this.issues.add({ ...l, message: `${out.message}` });
        return;
      }
      if (!shared) continue;
      const key = out.path.toLowerCase(); // case-insensitive file systems would merge these
      const taken = this.files.get(key);
      const other =
        taken === undefined
          ? undefined
          : { id: this.ids[Math.floor(taken / outputsChecked)]!, n: (taken % outputsChecked) + 1 };
      if (other !== undefined && other.id !== item.id) {
        const hint = outputsChecked > 1 ? '; put {{n}} in output.name (as in the default "{{id}}-{{n}}.{{ext}}")' : '';
        const l = this.at(item.where, 'id');
        this.issues.add({
          ...l,
          message: `items ${named(other.id, other.n)} and ${named(item.id, n)} would write the same file ${out.path}${hint}`,
        });
        return;
      }
      this.files.set(key, seq * outputsChecked + n - 1);
    }
  }

  /** Where a field of an item is written, for an issue. Located only when there is something to say: finding a node in a big YAML file is the costly part. */
  private at(where: ItemOrigin, field: string) {
    const root = field.replace(/\[\d+\]$/, '');
    const index = /\[(\d+)\]$/.exec(field)?.[1];
    const path = ['items', where.itemIndex, root, ...(index !== undefined ? [Number(index)] : [])];
    const pos = this.source.locate(path);
    return { file: this.source.file, ...pos, field: fieldPath(path), row: where.row };
  }

  /** Where the item that came `seq`th was written: its row, else its place in the manifest. */
  private placeOf(seq: number): string {
    const place = this.itemPlaces.get(this.itemIndexes[seq]!)!;
    const line = this.rowLines[seq]!;
    return place.rowsFile !== undefined && line > 0 ? `${place.rowsFile}:${line}` : `${this.source.file}:${place.line}`;
  }
}

/** An id as the default output name puts it in a file name, in lower case. */
const foldedId = (id: string) => safeFileValue(id).toLowerCase();

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
