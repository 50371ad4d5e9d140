import { IssueList, type LoadedManifest, type ManifestIssue } from '../manifest/index.js';
import { RunClock } from '../scheduler/clock.js';
import { DEFAULT_KEY_LIMITS } from '../scheduler/limits.js';
import { EXIT, ExitError } from '../util/exit-error.js';
import { environmentFor, type Credentials } from './environment.js';
import { asRunError } from './outcome.js';

export interface ValidateOptions extends Credentials {
  /** Where a relative manifest path is read from (default: the process's working directory). */
  cwd?: string;
  /** Also check every model, kind, mode and value against the service's catalog and the key's scopes. */
  online?: boolean;
  /** With `online`: against the embedded simulator, not the service. */
  simulate?: boolean;
}

/** What `validate()` finds: the document `genbatch validate --json` prints. */
export interface ValidateResult {
  manifest: string;
  name?: string;
  valid: boolean;
  items?: { total: number; image: number; video: number };
  /** Where outputs go: a folder's absolute path, or `s3://BUCKET/PREFIX`. */
  outputDir?: string;
  /** Checked against the service (true), or not asked (null). */
  online: boolean | null;
  /** Each problem with its file, line, column and field; nothing is sent while there is one. */
  issues: ManifestIssue[];
  /** Problems of the same kind beyond the first 20, counted and not listed. */
  more: number;
  warnings: ManifestIssue[];
}

/**
 * Checks a manifest as `genbatch validate` does: offline (schema, templates,
 * rows, files), and with `online` against the service. An invalid manifest
 * is a result (`valid: false`), not an error; the service refusing every key
 * or not answering rejects with an error that has `exitCode`.
 */
export async function validate(manifest: string, options: ValidateOptions = {}): Promise<ValidateResult> {
  try {
    return await validateWith(manifest, options, environmentFor(options), options.cwd ?? process.cwd());
  } catch (error) {
    throw asRunError(error);
  }
}

/** `validate()` for the library and the command line alike. */
export async function validateWith(
  path: string,
  options: Pick<ValidateOptions, 'online' | 'simulate' | 'baseUrl'>,
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<ValidateResult> {
  const { loadManifest } = await import('../manifest/validate.js');
  const { loaded, issues, warnings } = await loadManifest(path, cwd);
  if (!loaded || issues.count > 0) return invalid(loaded?.source.file ?? path, issues, warnings, loaded);
  const found = { ...facts(loaded), warnings };
  if (!options.online) return { ...found, online: null };
  const online = await checkOnline(loaded, options, env);
  return online.count > 0 ? invalid(loaded.source.file, online, warnings, loaded) : { ...found, online: true };
}

function facts(m: LoadedManifest): Omit<ValidateResult, 'online' | 'warnings'> {
  const image = m.items.filter((i) => i.type === 'image').length;
  return {
    manifest: m.source.file,
    name: m.name,
    valid: true,
    items: { total: m.items.length, image, video: m.items.length - image },
    outputDir: m.outputDir,
    issues: [],
    more: 0,
  };
}

function invalid(
  file: string,
  issues: IssueList,
  warnings: ManifestIssue[],
  loaded: LoadedManifest | undefined,
): ValidateResult {
  return {
    ...(loaded ? facts(loaded) : { manifest: file }),
    valid: false,
    online: null,
    issues: issues.issues,
    more: issues.count - issues.issues.length,
    warnings,
  };
}

/** The items against the service's catalog and the keys' scopes (with several keys, what they may submit together). */
async function checkOnline(
  loaded: LoadedManifest,
  options: Pick<ValidateOptions, 'simulate' | 'baseUrl'>,
  env: NodeJS.ProcessEnv,
): Promise<IssueList> {
  // Loaded only to go online: a plain validate reads files, without the HTTP client (about 0.1 s to load).
  const [{ connect }, { Catalog }, { setUpPool }, { checkAgainstService }, { untilFirstAnswer }] = await Promise.all([
    import('./connection.js'),
    import('../api/catalog.js'),
    import('../api/pool-setup.js'),
    import('../manifest/online.js'),
    import('../api/until-answered.js'),
  ]);
  const connection = await connect(options, env);
  try {
    // A service not up yet (a simulator started a moment before) is asked again, a few seconds at most.
    const pool = await untilFirstAnswer(() =>
      setUpPool(connection.keys, DEFAULT_KEY_LIMITS, new RunClock(Date.now, 1)),
    );
    if (pool.keys.length === 0)
      throw new ExitError(
        EXIT.stopped,
        `the service refused every key: ${pool.refused.map((r) => `${r.fingerprint} ${r.code}`).join(', ')}`,
      );
    const catalog = await Catalog.fetch(
      pool.keys[0]!.client,
      loaded.items.map((i) => i.type),
    );
    const issues = new IssueList();
    checkAgainstService(loaded.items, loaded.source, catalog, pool.scopes, issues);
    return issues;
  } finally {
    await connection.close();
  }
}
