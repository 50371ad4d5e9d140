// Light on purpose: the commands that only read a state (status, report, retry) load the manifest's top level, not its validator.
import { formatIssue, type IssueList, type ManifestIssue } from './issues.js';
import { locateManifest, type ManifestLocation } from './locate.js';
import type { CheckedManifest, LoadedManifest, ManifestTop } from './validate.js';
import { EXIT, ExitError } from '../util/exit-error.js';

const MAX_PRINTED = 50;

/** The problems as lines (the first 50), and how many there are. */
export function issueReport(issues: Pick<IssueList, 'issues' | 'count'>): string {
  const shown = issues.issues.slice(0, MAX_PRINTED).map(formatIssue);
  const hidden = issues.count - shown.length;
  const more = hidden > 0 ? [`… and ${hidden} more like these`] : [];
  return [
    ...shown,
    ...more,
    `${issues.count} problem${issues.count === 1 ? '' : 's'} found; nothing was submitted.`,
  ].join('\n');
}

/** The manifest's name and output dir from its top level, for commands that only read its state. */
export async function locate(path: string, cwd: string): Promise<ManifestLocation> {
  const { location, issues } = await locateManifest(path, cwd);
  if (!location) throw new ExitError(EXIT.usage, issueReport(issues));
  return location;
}

/** Loads and validates offline; any problem is exit 2 with every issue located. Warnings come with the manifest. `top`: its top level, already read. */
export async function loadValid(
  path: string,
  cwd: string,
  top?: ManifestTop,
): Promise<LoadedManifest & { warnings: ManifestIssue[] }> {
  const { loadManifest } = await import('./validate.js');
  const { loaded, issues, warnings } = await loadManifest(path, cwd, top);
  if (!loaded || issues.count > 0) throw new ExitError(EXIT.usage, issueReport(issues));
  return { ...loaded, warnings };
}

/** Checks offline as `loadValid` does, without holding the items (a run expands them again as it writes them); any problem is exit 2. */
export async function checkValid(
  path: string,
  cwd: string,
  top?: ManifestTop,
  rowsRead?: ReadonlyMap<string, Buffer>,
): Promise<CheckedManifest & { warnings: ManifestIssue[] }> {
  const { checkManifest } = await import('./validate.js');
  const { checked, issues, warnings } = await checkManifest(path, cwd, top, rowsRead);
  if (!checked || issues.count > 0) throw new ExitError(EXIT.usage, issueReport(issues));
  return Object.assign(checked, { warnings });
}

/** Warnings as lines: "warning: file:line:column: field: message". */
export function warningReport(warnings: readonly ManifestIssue[]): string {
  return warnings.map((w) => `warning: ${formatIssue(w)}`).join('\n');
}
