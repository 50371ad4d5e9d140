import { relative, resolve } from 'node:path';
import type { IssueList, RowAt } from './issues.js';
import { ItemContext } from './item-context.js';
import { ExpansionReads } from './disk-checks.js';
import { readRows } from './rows.js';
import type { FileInputSpec, Manifest, ManifestItem } from './schema.js';
import { type ManifestSource, fieldPath } from './source.js';
import { render, toText, uniqueTemplateNames, type TemplateContext } from './templates.js';
import type { ManifestIssue } from './issues.js';
import type { InputRef, ResolvedItem } from './types.js';
import { checkCopyPlan, copyPlanOf, topCopyPlanOf } from './copy-plan.js';
import { approvedOf, checkId, durationMs, tagsOf, type Check } from './item-fields.js';

type Merged = Omit<ManifestItem, 'matrix' | 'rows' | 'repeat'>;
type Combo = Map<string, string>;

const VIDEO_ONLY = ['duration', 'image', 'referenceImages', 'video', 'source'] as const;
const VIDEO_INPUTS = ['image', 'referenceImages', 'video', 'source'] as const;
/** Items per batch the expansion gives: small enough for a 5 ms step of the run to take one. */
const BATCH_ITEMS = 256;

/** Expands every item of a parsed manifest, reporting each problem where it was written. */
export class Expander {
  /** Ids of items that had errors of their own: references to them are not reported again. */
  readonly invalidIds = new Set<string>();
  /** Template values that were empty in a prompt that is not: counted per item and name, with the first places. */
  private readonly emptyValues = new Map<
    string,
    { issue: Omit<ManifestIssue, 'message'>; name: string; count: number; first: string[] }
  >();

  constructor(
    private readonly source: ManifestSource,
    private readonly manifest: Manifest,
    private readonly cwd: string,
    private readonly issues: IssueList,
    /** Which items to expand, by index: all of them unless some failed the schema. */
    private readonly only?: ReadonlySet<number>,
    /** What was read from disk: kept, so that expanding again reads what was checked. */
    private readonly reads: ExpansionReads = new ExpansionReads(),
  ) {}

  /** An expander of the same manifest that reads what this one read, reporting to `issues`. */
  again(issues: IssueList): Expander {
    return new Expander(this.source, this.manifest, this.cwd, issues, this.only, this.reads);
  }

  /**
   * Every item, expanded, in manifest order, a batch at a time: a caller
   * that checks or writes them as they come never holds 100,000 at once.
   * Rows resolve without an await of their own: only items with files wait,
   * for the checks.
   */
  async *batches(): AsyncGenerator<ResolvedItem[]> {
    for (const [index, item] of this.manifest.items.entries()) {
      if (!this.only || this.only.has(index)) yield* this.expandItem(item, index);
    }
  }

  private async *expandItem(item: ManifestItem, index: number): AsyncGenerator<ResolvedItem[]> {
    const { matrix, rows, repeat, ...own } = item;
    const top = this.manifest.approval ? { approval: this.manifest.approval } : {};
    const merged: Merged = { ...top, ...topCopyPlanOf(this.manifest), ...this.manifest.defaults, ...own };
    const combos = matrixCombos(matrix ?? {});
    // Each combination's values as one object, made once: the item's own values, carried to the results.
    const comboValues = combos.map((combo) => (combo.size ? Object.fromEntries(combo) : undefined));
    const vars = new Map(Object.entries(this.manifest.vars ?? {}).map(([k, v]) => [k, toText(v)]));
    let out: ResolvedItem[] = [];
    const keep = (one: ResolvedItem | undefined) => {
      if (!one) return;
      if (!repeat || repeat === 1) out.push(one);
      else for (let k = 1; k <= repeat; k++) out.push({ ...one, id: `${one.id}#${k}` });
    };
    const add = async (
      ctx: ItemContext,
      row: { file: string; line: number } | undefined,
      values: Record<string, string> | undefined,
    ) => {
      const resolved = this.resolve(merged, index, ctx, row, values);
      keep(resolved instanceof Promise ? await resolved : resolved);
    };
    if (!rows) {
      for (const [i, combo] of combos.entries()) {
        await add(new ItemContext(vars, undefined, combo), undefined, comboValues[i]);
        if (out.length >= BATCH_ITEMS) {
          yield out;
          out = [];
        }
      }
      if (out.length) yield out;
      return;
    }
    const absRows = resolve(this.source.dir, rows);
    const rowsFile = relative(this.cwd, absRows) || rows;
    const problem = await this.reads.file(absRows);
    if (problem)
      return this.report(
        ['items', index, 'rows'],
        `cannot read the rows: ${problem}: ${rows} (relative to the manifest)`,
      );
    const files = hasFileInputs(merged);
    for await (const batch of readRows(absRows, rowsFile, this.issues, this.reads.rowsFiles)) {
      for (const row of batch) {
        for (let i = 0; i < combos.length; i++) {
          // The parser's record itself when there is no matrix: no copy per row.
          const values = comboValues[i] ? { ...row.fields, ...comboValues[i] } : row.fields;
          const ctx = new ItemContext(vars, row.fields, combos[i]!);
          const where = { file: rowsFile, line: row.line };
          // Without files an item resolves at once: no promise per row.
          if (files) await add(ctx, where, values);
          else keep(this.resolve(merged, index, ctx, where, values) as ResolvedItem | undefined);
        }
        if (out.length >= BATCH_ITEMS) {
          yield out;
          out = [];
        }
      }
    }
    if (out.length) yield out;
  }

  /** Where a field was written: on the item, or in `defaults`. */
  private pathOf(index: number, field: string): (string | number)[] {
    const own = this.manifest.items[index] as Record<string, unknown>;
    return field in own || !(field in (this.manifest.defaults ?? {})) ? ['items', index, field] : ['defaults', field];
  }

  private report(path: (string | number)[], message: string, row?: { file: string; line: number }): void {
    const pos = this.source.locate(path);
    this.issues.add({ file: this.source.file, ...pos, field: fieldPath(path), message, row });
  }

  /** The item, at once when it names no files; a promise when their checks must be waited for. */
  private resolve(
    merged: Merged,
    index: number,
    ctx: ItemContext,
    row: RowAt | undefined,
    values: Record<string, string> | undefined,
  ): ResolvedItem | undefined | Promise<ResolvedItem | undefined> {
    const check = this.checkFor(index, ctx, row);
    const fields = this.fieldsOf(merged, ctx, check);
    const named = this.nameAndPrompt(merged, index, ctx, fields, check, row);
    // No object spread here: it runs once per row, and a spread of these made each item's facts a slow dictionary.
    const finish = (files: FileRefs) => this.assemble(merged, index, fields, named, files, check, row, values);
    if (!hasFileInputs(merged)) return finish({});
    return this.fileRefs(merged, ctx, check.fail).then(finish);
  }

  /** One item's checks: a failure reports where it was written, and a field's text is rendered and must not be empty. */
  private checkFor(index: number, ctx: ItemContext, row: RowAt | undefined): Check {
    const check: Check = {
      ok: true,
      fail: (field, message, at) => {
        check.ok = false;
        this.report([...this.pathOf(index, field), ...(at === undefined ? [] : [at])], message, row);
      },
      text: (field, value) => {
        if (value === undefined) return undefined;
        // Most fields are the same text on every row: no render, and no result object, for them.
        if (!value.includes('{{') && value.trim() !== '') return value;
        const r = render(value, ctx);
        if (!r.ok) return void check.fail(field, r.message);
        if (r.value.trim() === '')
          return void check.fail(field, `expected a non-empty value, found ${JSON.stringify(r.value)} after templates`);
        return r.value;
      },
    };
    return check;
  }

  /** The item's own fields, rendered: type, model, shape, priority and tags. */
  private fieldsOf(merged: Merged, ctx: ItemContext, check: Check): ItemFields {
    const { text } = check;
    const fields: ItemFields = {
      type: merged.type ?? 'image',
      model: text('model', merged.model),
      aspectRatio: text('aspectRatio', merged.aspectRatio),
      resolution: text('resolution', merged.resolution),
      duration: merged.duration === undefined ? undefined : text('duration', String(merged.duration)),
      priority: merged.priority === undefined ? undefined : text('priority', String(merged.priority)),
      tags: merged.tags === undefined ? undefined : tagsOf(merged.tags, ctx, check),
      approved: merged.approved === undefined ? undefined : approvedOf(merged.approved, ctx, check),
    };
    const { aspectRatio, duration, priority } = fields;
    if (merged.model === undefined) check.fail('model', 'missing: set model on the item or in defaults');
    if (aspectRatio !== undefined && !/^\d+:\d+$/.test(aspectRatio))
      check.fail('aspectRatio', `expected <w>:<h> such as "4:5", found ${JSON.stringify(aspectRatio)}`);
    if (duration !== undefined && !(Number(duration) > 0))
      check.fail('duration', `expected a number of seconds, found ${JSON.stringify(duration)}`);
    if (priority !== undefined && !Number.isFinite(Number(priority)))
      check.fail('priority', `expected a number (higher goes first), found ${JSON.stringify(priority)}`);
    return fields;
  }

  /** The item's id and prompt, rendered once its fields joined its context (the id and prompt may name them). */
  private nameAndPrompt(
    merged: Merged,
    index: number,
    withFields: ItemContext,
    fields: ItemFields,
    check: Check,
    row: RowAt | undefined,
  ): { id: string | undefined; prompt: string | undefined } {
    withFields.set('type', fields.type);
    if (fields.model !== undefined) withFields.set('model', fields.model);
    if (fields.aspectRatio !== undefined) withFields.set('aspectRatio', fields.aspectRatio);
    if (fields.resolution !== undefined) withFields.set('resolution', fields.resolution);
    if (fields.duration !== undefined) withFields.set('duration', fields.duration);
    const idRender = render(this.manifest.items[index]!.id, withFields);
    const id = idRender.ok ? idRender.value : undefined;
    if (!idRender.ok) check.fail('id', idRender.message);
    else if (id !== undefined) {
      checkId(id, (m) => check.fail('id', m));
      emptyIn(this.manifest.items[index]!.id, withFields, (m) => check.fail('id', m));
    }
    if (id !== undefined) withFields.set('id', id);
    if (merged.prompt === undefined) {
      check.fail('prompt', 'missing: set prompt on the item or in defaults');
      return { id, prompt: undefined };
    }
    const promptRender = render(merged.prompt, withFields);
    if (!promptRender.ok) check.fail('prompt', promptRender.message);
    const prompt = promptRender.ok ? promptRender.value : undefined;
    // An empty prompt is refused by the service, or worse, paid for as a generic image: say so before anything is sent.
    if (prompt !== undefined && prompt.trim() === '')
      check.fail('prompt', `expected a non-empty prompt, found ${JSON.stringify(prompt)} after templates`);
    else if (prompt !== undefined) this.noteEmptyValues(index, merged.prompt, withFields, row);
    return { id, prompt };
  }

  /** The inputs a type takes are checked, then the item is built: fields set one by one (this runs once per row). */
  private assemble(
    merged: Merged,
    index: number,
    f: ItemFields,
    named: { id: string | undefined; prompt: string | undefined },
    files: FileRefs,
    check: Check,
    row: RowAt | undefined,
    values: Record<string, string> | undefined,
  ): ResolvedItem | undefined {
    const sourceId = merged.source === undefined ? undefined : check.text('source', merged.source);
    checkInputsOfType(merged, f.type, check.fail);
    checkCopyPlan(this.manifest.items[index]!, merged, f.type, check.fail);
    const { id, prompt } = named;
    const { model } = f;
    if (!check.ok || id === undefined || model === undefined || prompt === undefined) {
      if (id !== undefined) this.invalidIds.add(id);
      return undefined;
    }
    const pos = this.itemPosition(index);
    // No object spread per field.
    const item = { id, type: f.type, model, prompt } as ResolvedItem;
    if (f.aspectRatio !== undefined) item.aspectRatio = f.aspectRatio;
    if (f.resolution !== undefined) item.resolution = f.resolution;
    if (f.duration !== undefined) item.duration = String(Number(f.duration));
    if (files.inputs) item.inputs = files.inputs;
    if (files.image) item.image = files.image;
    if (files.referenceImages) item.referenceImages = files.referenceImages;
    if (files.video) item.video = files.video;
    if (sourceId !== undefined) item.source = sourceId;
    if (f.priority !== undefined && Number(f.priority) !== 0) item.priority = Number(f.priority);
    if (f.tags?.length) item.tags = f.tags;
    const gates = [
      ...(f.approved ?? []).map((gate, i) => ({ id: gate, field: `approved[${i}]` })),
      ...(files.gates ?? []),
    ];
    if (gates.length) item.gates = gates;
    if (merged.approval)
      item.approval = { timeoutMs: durationMs(merged.approval.timeout), onTimeout: merged.approval.onTimeout };
    if (values) item.values = values;
    const plan = copyPlanOf(merged, f.type);
    if (plan) item.finish = plan;
    item.where = row
      ? { file: this.source.file, line: pos.line, column: pos.column, itemIndex: index, row }
      : { file: this.source.file, line: pos.line, column: pos.column, itemIndex: index };
    return item;
  }

  /** The item's file inputs, each checked (it exists, it is readable, its bytes are the media the field takes). */
  private async fileRefs(
    merged: Merged,
    withFields: TemplateContext,
    fail: (field: string, message: string, at?: number) => void,
  ): Promise<FileRefs> {
    const expects = (field: string): 'image' | 'video' => (field === 'video' ? 'video' : 'image');
    const gates: { id: string; field: string }[] = [];
    const ref = async (field: string, spec: FileInputSpec | undefined, at?: number): Promise<InputRef | undefined> => {
      if (spec === undefined) return undefined;
      if (typeof spec !== 'string') {
        const target = render(spec.from, withFields);
        if (!target.ok) return void fail(field, target.message, at);
        if (spec.approved) gates.push({ id: target.value, field: at === undefined ? field : `${field}[${at}]` });
        return { kind: 'item', id: target.value };
      }
      const path = render(spec, withFields);
      if (!path.ok) return void fail(field, path.message, at);
      const abs = resolve(this.source.dir, path.value);
      const problem = (await this.reads.file(abs)) ?? (await this.reads.media(abs, expects(field)));
      if (problem) return void fail(field, `${problem}: ${path.value} (relative to the manifest)`, at);
      return { kind: 'file', path: abs, display: path.value };
    };
    const refs = async (field: string, specs: FileInputSpec[] | undefined) =>
      specs === undefined
        ? undefined
        : ((await Promise.all(specs.map((spec, i) => ref(field, spec, i)))) as InputRef[]);
    const inputs = await refs('inputs', merged.inputs);
    const image = await ref('image', merged.image);
    const referenceImages = await refs('referenceImages', merged.referenceImages);
    const video = await ref('video', merged.video);
    return { inputs, image, referenceImages, video, gates: gates.length ? gates : undefined };
  }

  /** "{{title}}, studio product photo" with an empty title is paid for as a generic image: worth a warning, not an error. */
  private noteEmptyValues(
    index: number,
    template: string,
    ctx: TemplateContext,
    row: { file: string; line: number } | undefined,
  ): void {
    if (!template.includes('{{')) return;
    for (const name of uniqueTemplateNames(template)) {
      if (ctx.get(name)?.trim() !== '') continue;
      const key = `${index}\n${name}`;
      let seen = this.emptyValues.get(key);
      if (!seen) {
        const path = this.pathOf(index, 'prompt');
        this.emptyValues.set(
          key,
          (seen = {
            issue: { file: this.source.file, ...this.source.locate(path), field: fieldPath(path) },
            name,
            count: 0,
            first: [],
          }),
        );
      }
      seen.count++;
      if (seen.first.length < 3)
        seen.first.push(row ? `${row.file}:${row.line}` : `${this.source.file}:${seen.issue.line}`);
    }
  }

  /** The warnings: one per item and template name, with how many items and where the first are. */
  warnings(): ManifestIssue[] {
    return [...this.emptyValues.values()].map(({ issue, name, count, first }) => ({
      ...issue,
      message: `{{${name}}} is empty in ${count} item${count === 1 ? '' : 's'} (${count > first.length ? 'first at ' : 'at '}${first.join(', ')}): the prompt is sent without it`,
    }));
  }

  private readonly positions = new Map<number, { line: number; column: number }>();

  /** Where item `index` is written: asked once per item of the manifest, not once per row it expands to. */
  private itemPosition(index: number): { line: number; column: number } {
    let pos = this.positions.get(index);
    if (!pos) this.positions.set(index, (pos = this.source.locate(['items', index])));
    return pos;
  }
}

/** An item's own fields, rendered. */
interface ItemFields {
  type: 'image' | 'video';
  model: string | undefined;
  aspectRatio: string | undefined;
  resolution: string | undefined;
  duration: string | undefined;
  priority: string | undefined;
  tags: string[] | undefined;
  /** The gates `approved` names, rendered. */
  approved: string[] | undefined;
}

/** An image takes no video fields; a video takes exactly one kind of input. */
function checkInputsOfType(merged: Merged, type: 'image' | 'video', fail: Check['fail']): void {
  if (type === 'image') {
    for (const field of VIDEO_ONLY)
      if (merged[field] !== undefined)
        fail(field, `${field} applies to video items; this item is an image (set type: video)`);
    return;
  }
  if (merged.inputs !== undefined)
    fail('inputs', 'inputs are for image editing; a video takes image, referenceImages, video or source');
  const given = VIDEO_INPUTS.filter((f) => merged[f] !== undefined);
  if (given.length === 0)
    fail(
      'type',
      'a video item needs one input: image (image-to-video), referenceImages (reference-to-video), video or source (video-extend / video-edit)',
    );
  if (given.length > 1) fail(given[1]!, `a video item takes one kind of input, found ${given.join(' and ')}`);
}

interface FileRefs {
  inputs?: InputRef[] | undefined;
  image?: InputRef | undefined;
  referenceImages?: InputRef[] | undefined;
  video?: InputRef | undefined;
  /** The items an input given `approved: true` names: gates. */
  gates?: { id: string; field: string }[] | undefined;
}

/** Whether an item names files (or other items' outputs) to check: most catalog rows do not. */
function hasFileInputs(merged: Merged): boolean {
  return (
    merged.inputs !== undefined ||
    merged.image !== undefined ||
    merged.referenceImages !== undefined ||
    merged.video !== undefined
  );
}

/** Every combination of the matrix values, in key order; one empty combination without a matrix. */
function matrixCombos(matrix: Record<string, (string | number | boolean)[]>): Combo[] {
  let combos: Combo[] = [new Map()];
  for (const [name, values] of Object.entries(matrix)) {
    combos = combos.flatMap((c) => values.map((v) => new Map([...c, [name, toText(v)]])));
  }
  return combos;
}

/** An id (and so its file names) built from an empty value names nothing: `pdp-`, `pdp--1.png`, and the next such row collides. */
function emptyIn(template: string, ctx: TemplateContext, fail: (message: string) => void): void {
  if (!template.includes('{{')) return;
  for (const name of uniqueTemplateNames(template))
    if (ctx.get(name)?.trim() === '')
      fail(
        `the id is built from {{${name}}}, which is empty here: give it a value, or leave {{${name}}} out of the id`,
      );
}
