import { IssueList } from './issues.js';
import { resolveOutDir } from './output-paths.js';
import { ManifestSource } from './source.js';

/** Where a manifest's run lives: enough to find its state and outputs. */
export interface ManifestLocation {
  source: ManifestSource;
  /** `name`, else the file name. */
  name: string;
  /** Absolute; `output.dir` relative to the manifest, else out/<name> beside it. */
  outputDir: string;
  /** `budget.maxCredits`, when it is a number (the review app draws it). */
  maxCredits?: number;
}

/**
 * Finds a manifest's name and output dir from its top level alone, without
 * expanding or validating its items: `status`, `report` and `retry` read the
 * state, and a 100,000-row catalog need not be checked for that. A problem
 * with the file itself (unreadable, not YAML) is still reported.
 */
export async function locateManifest(
  path: string,
  cwd = process.cwd(),
): Promise<{ issues: IssueList; location?: ManifestLocation }> {
  const issues = new IssueList();
  const source = await ManifestSource.read(path, cwd, issues);
  if (!source) return { issues };
  const top = (key: string): unknown =>
    source.doc.contents && 'get' in source.doc.contents
      ? (source.doc.contents as { get(k: string): unknown }).get(key)
      : undefined;
  const named = top('name');
  const output = top('output') as { get?(k: string): unknown } | undefined;
  const dir = output?.get?.('dir');
  const name = typeof named === 'string' && named ? named : source.stem;
  const budget = (top('budget') as { get?(k: string): unknown } | undefined)?.get?.('maxCredits');
  return {
    issues,
    location: {
      source,
      name,
      outputDir: resolveOutDir(source.dir, typeof dir === 'string' && dir ? dir : `out/${name}`),
      ...(typeof budget === 'number' ? { maxCredits: budget } : {}),
    },
  };
}
