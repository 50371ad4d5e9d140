import { resolve } from 'node:path';
import { Expander } from './expand.js';
import { IssueList, type ManifestIssue } from './issues.js';
import { DEFAULT_OUTPUT_NAME, outputTemplateProblem } from './output-paths.js';
import { checkAcrossItems } from './rules.js';
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
export async function loadManifest(path: string, cwd = process.cwd(), readAlready?: ManifestTop): Promise<ValidationResult> {
  const read: TopRead = readAlready ? { issues: new IssueList(), top: readAlready, schemaOk: true } : await readTop(path, cwd);
  if (!read.top) return { issues: read.issues, warnings: [] };
  const { top, issues, only, schemaOk, templateProblem } = read;
  const expander = new Expander(top.source, top.manifest, cwd, issues, only);
  const items = await expander.all();
  if (!schemaOk) return { issues, warnings: expander.warnings() };
  if (!templateProblem) checkAcrossItems(items, top.source, top.outputName, top.vars, issues, expander.invalidIds);
  if (items.length === 0 && issues.count === 0) issues.add({ file: top.source.file, ...top.source.locate(['items']), field: 'items', message: 'the manifest expands to no items (are the rows files empty?)' });
  return { loaded: { ...top, items }, issues, warnings: expander.warnings() };
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
}

async function readTop(path: string, cwd: string): Promise<TopRead> {
  const issues = new IssueList();
  const source = await ManifestSource.read(path, cwd, issues);
  if (!source) return { issues };
  const data = source.doc.toJS({ maxAliasCount: 100 }) as unknown;
  const report = (p: readonly PropertyKey[], message: string) => {
    const segments = p.map((s) => (typeof s === 'symbol' ? String(s) : s));
    issues.add({ file: source.file, ...source.locate(segments), field: fieldPath(segments), message: `${message}${source.templateHint(segments)}` });
  };
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    report([], data == null ? 'the manifest is empty: expected version: 1 and items' : 'expected a mapping with version and items');
    return { issues };
  }
  const parsed = manifestSchema.safeParse(data);
  let manifest: Manifest;
  let only: Set<number> | undefined;
  if (parsed.success) manifest = parsed.data;
  else {
    for (const issue of parsed.error.issues) for (const e of explainIssue(issue, data)) report(e.path, e.message);
    // Keep looking: expand the items that did parse, so their template and file errors show now too.
    const partial = salvage(data as Record<string, unknown>, parsed.error.issues.map((i) => i.path));
    if (!partial) return { issues };
    ({ manifest, only } = partial);
  }
  const vars = new Map(Object.entries(manifest.vars ?? {}).map(([k, v]) => [k, toText(v)]));
  const outputName = manifest.output?.name ?? DEFAULT_OUTPUT_NAME;
  const templateProblem = outputTemplateProblem(outputName, [...vars.keys()]);
  if (templateProblem) report(['output', 'name'], templateProblem);
  const name = manifest.name ?? source.stem;
  const outputDir = resolve(source.dir, manifest.output?.dir ?? `out/${name}`);
  return { issues, top: { source, manifest, name, outputDir, outputName, vars }, ...(only ? { only } : {}), schemaOk: parsed.success, ...(templateProblem ? { templateProblem } : {}) };
}

/** The parts of a manifest that passed the schema: enough to expand the good items. */
function salvage(data: Record<string, unknown>, badPaths: PropertyKey[][]): { manifest: Manifest; only: Set<number> } | undefined {
  const badTop = new Set(badPaths.map((p) => p[0]).filter((k) => k !== 'items'));
  if (badTop.has('defaults') || badTop.has('vars') || !Array.isArray(data.items)) return undefined;
  const badItems = new Set(badPaths.filter((p) => p[0] === 'items' && typeof p[1] === 'number').map((p) => p[1] as number));
  const items = data.items as Manifest['items'];
  const only = new Set(items.map((_, i) => i).filter((i) => !badItems.has(i)));
  if (badPaths.some((p) => p[0] === 'items' && p.length === 1)) return undefined;
  // A top-level value the schema refused (name, output, prices, budget…) is left out, as if unset: its errors are reported already, and its raw value is of no type the rest can read.
  const manifest = Object.fromEntries(Object.entries(data).filter(([key]) => !badTop.has(key))) as unknown as Manifest;
  return { manifest: { ...manifest, items }, only };
}
