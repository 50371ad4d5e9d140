import type { ItemShape } from '../store/index.js';
import { ExpansionReads } from './disk-checks.js';
import { Expander } from './expand.js';
import { formatIssue, IssueList, type ManifestIssue } from './issues.js';
import { DEFAULT_OUTPUT_NAME, outDirProblem, outputTemplateProblem, resolveOutDir } from './output-paths.js';
import { RowsFiles } from './rows.js';
import { AcrossItems } from './rules.js';
import { ItemsTally } from './shapes.js';
import { manifestSchema, type Manifest } from './schema.js';
import { ManifestSource, fieldPath } from './source.js';
import { toText } from './templates.js';
import type { ResolvedItem } from './types.js';
import { explainIssue } from './zod-issues.js';

/** A manifest's top level, parsed and checked: everything but its items. */
export interface ManifestTop {
  source: ManifestSource;
  manifest: Manifest;
  /** `name`, else the file name. */
  name: string;
  /** Absolute; `output.dir` relative to the manifest, else out/<name> beside it. */
  outputDir: string;
  outputName: string;
  vars: ReadonlyMap<string, string>;
}

export interface LoadedManifest extends ManifestTop {
  items: ResolvedItem[];
}

export interface ValidationResult {
  /** Undefined when the file could not be read or parsed at all. */
  loaded?: LoadedManifest;
  issues: IssueList;
  /** What is valid but likely not meant (a template value empty in a prompt). */
  warnings: ManifestIssue[];
}

/**
 * Parse with zod → expand (defaults, matrix, rows, repeat, templates) → rules
 * across items. Every problem is collected with its location; nothing is printed.
 * `readAlready`, when given, is this manifest's top level as `loadManifestTop` read
 * it without a problem: its text is not read and parsed a second time.
 */
export async function loadManifest(
  path: string,
  cwd = process.cwd(),
  readAlready?: ManifestTop,
): Promise<ValidationResult> {
  const items: ResolvedItem[] = [];
  const pass = await checkItems(path, cwd, readAlready, undefined, (item) => items.push(item));
  return { ...(pass.top ? { loaded: { ...pass.top, items } } : {}), issues: pass.issues, warnings: pass.warnings };
}

/** A manifest checked as `loadManifest` checks it, with what a run needs of its items before it writes them. */
export interface CheckedManifest extends ManifestTop {
  /** How many items it expands to. */
  count: number;
  shapes: ItemShape[];
  /** Absolute paths of the local files the items take as inputs. */
  inputFiles: Set<string>;
  /**
   * The items again, a batch at a time, expanded from what the check read
   * (the manifest's text, the rows files' bytes, the input files' checks):
   * the very items that were checked, whatever happened to the files since.
   */
  batches(): AsyncGenerator<ResolvedItem[]>;
}

export interface CheckResult {
  checked?: CheckedManifest;
  issues: IssueList;
  warnings: ManifestIssue[];
}

/**
 * Checks a manifest as `loadManifest` does, without holding its items: of
 * each it keeps what the checks across items need, and the run expands them
 * again as it writes them into the state. A 100,000-row catalog is checked
 * in about two thirds of the time, its items never all in memory.
 * `rowsRead`: rows files already read (for the sources' fingerprint), by
 * absolute path, expanded as they are.
 */
export async function checkManifest(
  path: string,
  cwd = process.cwd(),
  readAlready?: ManifestTop,
  rowsRead?: ReadonlyMap<string, Buffer>,
): Promise<CheckResult> {
  const tally = new ItemsTally();
  const pass = await checkItems(path, cwd, readAlready, rowsRead, (item) => tally.add(item));
  if (!pass.top || !pass.expander || !pass.ids) return { issues: pass.issues, warnings: pass.warnings };
  const { expander, ids } = pass;
  async function* batches(): AsyncGenerator<ResolvedItem[]> {
    const issues = new IssueList();
    let seq = 0;
    for await (const batch of expander.again(issues).batches()) {
      // Cannot happen (the same text and bytes expand the same way): a guard, so that nothing unchecked is ever written.
      for (const item of batch)
        if (item.id !== ids[seq++])
          throw new Error(
            `the manifest's item ${seq} expanded as ${JSON.stringify(item.id)} the second time, ${JSON.stringify(ids[seq - 1])} the first`,
          );
      if (issues.count > 0)
        throw new Error(
          `the manifest's items expanded with problems the second time: ${issues.issues[0] ? formatIssue(issues.issues[0]) : ''}`,
        );
      yield batch;
    }
    if (seq !== ids.length)
      throw new Error(`the manifest expanded to ${seq} items the second time, ${ids.length} the first`);
  }
  return {
    checked: { ...pass.top, count: ids.length, shapes: tally.shapes(), inputFiles: tally.inputFiles, batches },
    issues: pass.issues,
    warnings: pass.warnings,
  };
}

/** One pass over the items: each is checked across the others and given to `take` as it comes. `top` and `expander` are absent when the items could not all be checked. */
async function checkItems(
  path: string,
  cwd: string,
  readAlready: ManifestTop | undefined,
  rowsRead: ReadonlyMap<string, Buffer> | undefined,
  take: (item: ResolvedItem) => void,
): Promise<{
  top?: ManifestTop;
  expander?: Expander;
  ids?: readonly string[];
  issues: IssueList;
  warnings: ManifestIssue[];
}> {
  const read: TopRead = readAlready
    ? { issues: new IssueList(), top: readAlready, schemaOk: true }
    : await readTop(path, cwd);
  if (!read.top) return { issues: read.issues, warnings: [] };
  const { top, issues, only, schemaOk, templateProblem, leftOut } = read;
  const expander = new Expander(
    top.source,
    top.manifest,
    cwd,
    issues,
    only,
    new ExpansionReads(new RowsFiles(rowsRead)),
  );
  // Checked as they come, in manifest order: no item need be held for it. With items the schema refused left out,
  // the others are still checked against each other (unless the output name or vars they are named by was refused).
  const named = !templateProblem && !leftOut?.has('output') && !leftOut?.has('vars');
  const setsApproval = (i: number) => top.manifest.items[i]?.approval !== undefined;
  const across = named ? new AcrossItems(top.source, top.outputName, top.vars, issues, setsApproval) : undefined;
  let count = 0;
  for await (const batch of expander.batches()) {
    for (const item of batch) {
      count++;
      across?.add(item);
      take(item);
    }
  }
  across?.finish(expander.invalidIds, !leftOut?.has('items'));
  if (!schemaOk) return { issues, warnings: expander.warnings() };
  if (count === 0 && issues.count === 0)
    issues.add({
      file: top.source.file,
      ...top.source.locate(['items']),
      field: 'items',
      message: 'the manifest expands to no items (are the rows files empty?)',
    });
  return { top, expander, ...(across ? { ids: across.ids } : {}), issues, warnings: expander.warnings() };
}

/**
 * The top level alone, checked by the schema, without expanding the items:
 * a resumed run whose sources are as they were when its items were last
 * written into the state needs nothing more. Undefined on any problem.
 */
export async function loadManifestTop(path: string, cwd = process.cwd()): Promise<ManifestTop | undefined> {
  const read = await readTop(path, cwd);
  return read.top && read.schemaOk && !read.templateProblem && read.issues.count === 0 ? read.top : undefined;
}

interface TopRead {
  issues: IssueList;
  top?: ManifestTop;
  only?: Set<number>;
  schemaOk?: boolean;
  templateProblem?: string;
  /** What the schema refused and the rest was read without: top-level keys, and `items` when some items were. */
  leftOut?: ReadonlySet<string>;
}

async function readTop(path: string, cwd: string): Promise<TopRead> {
  const issues = new IssueList();
  const source = await ManifestSource.read(path, cwd, issues);
  if (!source) return { issues };
  const data = source.doc.toJS({ maxAliasCount: 100 }) as unknown;
  const report = (p: readonly PropertyKey[], message: string) => {
    const segments = p.map((s) => (typeof s === 'symbol' ? String(s) : s));
    issues.add({
      file: source.file,
      ...source.locate(segments),
      field: fieldPath(segments),
      message: `${message}${source.templateHint(segments)}`,
    });
  };
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    report(
      [],
      data == null
        ? 'the manifest is empty: expected version: 1 and items'
        : 'expected a mapping with version and items',
    );
    return { issues };
  }
  const parsed = manifestSchema.safeParse(data);
  let manifest: Manifest;
  let only: Set<number> | undefined;
  let leftOut: Set<string> | undefined;
  if (parsed.success) manifest = parsed.data;
  else {
    for (const issue of parsed.error.issues) for (const e of explainIssue(issue, data)) report(e.path, e.message);
    // Keep looking: expand the items that did parse, so their template and file errors show now too.
    const partial = salvage(
      data as Record<string, unknown>,
      parsed.error.issues.map((i) => i.path),
    );
    if (!partial) return { issues };
    ({ manifest, only, leftOut } = partial);
  }
  const vars = new Map(Object.entries(manifest.vars ?? {}).map(([k, v]) => [k, toText(v)]));
  const outputName = manifest.output?.name ?? DEFAULT_OUTPUT_NAME;
  const templateProblem = outputTemplateProblem(outputName, [...vars.keys()]);
  if (templateProblem) report(['output', 'name'], templateProblem);
  const dirProblem = manifest.output?.dir === undefined ? undefined : outDirProblem(manifest.output.dir);
  if (dirProblem) report(['output', 'dir'], dirProblem);
  const name = manifest.name ?? source.stem;
  const outputDir = resolveOutDir(source.dir, manifest.output?.dir ?? `out/${name}`);
  return {
    issues,
    top: { source, manifest, name, outputDir, outputName, vars },
    ...(only ? { only } : {}),
    ...(leftOut ? { leftOut } : {}),
    schemaOk: parsed.success,
    ...(templateProblem ? { templateProblem } : {}),
  };
}

/** The parts of a manifest that passed the schema: enough to expand the good items. */
function salvage(
  data: Record<string, unknown>,
  badPaths: PropertyKey[][],
): { manifest: Manifest; only: Set<number>; leftOut: Set<string> } | undefined {
  const badTop = new Set(badPaths.map((p) => p[0]).filter((k) => k !== 'items'));
  if (badTop.has('defaults') || badTop.has('vars') || !Array.isArray(data.items)) return undefined;
  const badItems = new Set(
    badPaths.filter((p) => p[0] === 'items' && typeof p[1] === 'number').map((p) => p[1] as number),
  );
  const items = data.items as Manifest['items'];
  const only = new Set(items.map((_, i) => i).filter((i) => !badItems.has(i)));
  if (badPaths.some((p) => p[0] === 'items' && p.length === 1)) return undefined;
  // A top-level value the schema refused (name, output, prices, budget…) is left out, as if unset: its errors are reported already, and its raw value is of no type the rest can read.
  const manifest = Object.fromEntries(Object.entries(data).filter(([key]) => !badTop.has(key))) as unknown as Manifest;
  const leftOut = new Set([...badTop].map(String));
  if (badItems.size) leftOut.add('items');
  return { manifest: { ...manifest, items }, only, leftOut };
}
