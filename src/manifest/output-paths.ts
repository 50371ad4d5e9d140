import { isAbsolute, relative, resolve, sep } from 'node:path';
import { render, templateNames, type TemplateContext } from './templates.js';

export const DEFAULT_OUTPUT_NAME = '{{id}}-{{n}}.{{ext}}';
const OUTPUT_NAMES = ['id', 'n', 'ext', 'model', 'type'];
export const MAX_SEGMENT_BYTES = 255;

/** What `output.name` may use: the output's own facts and the manifest's vars. */
export function outputTemplateProblem(template: string, varNames: readonly string[]): string | undefined {
  const known = new Set([...OUTPUT_NAMES, ...varNames]);
  const unknown = templateNames(template).filter((n) => !known.has(n));
  if (unknown.length)
    return `unknown template name ${unknown.map((n) => `{{${n}}}`).join(', ')}; output names may use ${[...known].map((n) => `{{${n}}}`).join(', ')}`;
  if (!templateNames(template).includes('id'))
    return 'output names must contain {{id}}, or items would overwrite each other';
  if (isAbsolute(template) || /^[a-zA-Z]:/.test(template))
    return 'expected a relative name inside the output dir, found an absolute path';
  if (template.split(/[\\/]/).some((s) => s === '..'))
    return 'expected a name inside the output dir, found a .. segment';
  return undefined;
}

const UNSAFE_IN_NAME = /[\\/\u0000-\u001f\u007f]/;
const UNSAFE_IN_NAME_ALL = /[\\/\u0000-\u001f\u007f]/g;

/** A value made harmless inside a file name: no separators, NUL or control characters, and never `.` or `..`. */
export function safeFileValue(value: string): string {
  // Tested first: most values are safe as they are, and are not copied.
  const cleaned = UNSAFE_IN_NAME.test(value) ? value.replace(UNSAFE_IN_NAME_ALL, '_') : value;
  return cleaned === '.' || cleaned === '..' ? cleaned.replace(/\./g, '_') : cleaned;
}

export interface OutputNameValues {
  id: string;
  n: number;
  ext: string;
  model: string;
  type: string;
  vars: ReadonlyMap<string, string>;
  /** The item's generation: 1 for its first job's outputs, 2 for the job that regenerated it, … */
  version?: number;
}

/**
 * The output's path relative to the output dir. Values are made safe before
 * they are put in; the result is checked again, so no manifest value can
 * name a file outside the output dir.
 */
export function outputRelativePath(
  template: string,
  v: OutputNameValues,
): { ok: true; path: string } | { ok: false; message: string } {
  const rendered = render(template, new OutputNameContext(v, safeVars(v.vars)));
  if (!rendered.ok) return rendered;
  let path = rendered.value.includes('\\') ? rendered.value.replace(/\\/g, '/') : rendered.value;
  if (v.n > 1 && !usesN(template)) path = path.replace(/(\.[^./]*)?$/, (ext) => `-${v.n}${ext}`);
  // A regenerated item's outputs never take the name of its earlier, paid ones: a-1.png, then a-1.v2.png.
  if (v.version !== undefined && v.version > 1) path = path.replace(/(\.[^./]*)?$/, (ext) => `.v${v.version}${ext}`);
  // The common name is one short segment: checked without splitting it (a catalog names 100,000).
  if (!path.includes('/') && path !== '.' && path !== '..' && path !== '' && path.length <= MAX_SEGMENT_BYTES / 4)
    return { ok: true, path };
  const segments = path.split('/');
  if (isAbsolute(path) || segments.some((s) => s === '' || s === '.' || s === '..')) {
    return { ok: false, message: `the output name ${JSON.stringify(path)} would leave the output dir` };
  }
  const long = segments.find((s) => Buffer.byteLength(s) > MAX_SEGMENT_BYTES);
  if (long)
    return {
      ok: false,
      message: `the output file name would be ${Buffer.byteLength(long)} bytes long; at most ${MAX_SEGMENT_BYTES} are allowed`,
    };
  return { ok: true, path: segments.join('/') };
}

/** The names an output name may use, read when the template asks (no map built per output: a catalog names 100,000). */
class OutputNameContext implements TemplateContext {
  constructor(
    private readonly v: OutputNameValues,
    private readonly vars: ReadonlyMap<string, string>,
  ) {}

  get(name: string): string | undefined {
    switch (name) {
      case 'id':
        return safeFileValue(this.v.id);
      case 'n':
        return String(this.v.n);
      case 'ext':
        return safeFileValue(this.v.ext);
      case 'model':
        return safeFileValue(this.v.model);
      case 'type':
        return this.v.type;
      default:
        return this.vars.get(name);
    }
  }

  keys(): MapIterator<string> {
    return new Set([...this.vars.keys(), ...OUTPUT_NAMES]).keys();
  }
}

// A catalog names 100,000 outputs with the same vars and template: made safe, and read, once.
const safeVarsCache = new WeakMap<ReadonlyMap<string, string>, ReadonlyMap<string, string>>();
function safeVars(vars: ReadonlyMap<string, string>): ReadonlyMap<string, string> {
  let safe = safeVarsCache.get(vars);
  if (!safe) safeVarsCache.set(vars, (safe = new Map([...vars].map(([k, x]) => [k, safeFileValue(x)] as const))));
  return safe;
}
const usesNCache = new Map<string, boolean>();
function usesN(template: string): boolean {
  let uses = usesNCache.get(template);
  if (uses === undefined) usesNCache.set(template, (uses = templateNames(template).includes('n')));
  return uses;
}

/** The absolute path of an output, refusing anything that resolves outside `outDir`. */
export function resolveInside(outDir: string, relativePath: string): string {
  const root = resolve(outDir);
  const full = resolve(root, relativePath);
  const rel = relative(root, full);
  if (rel === '' || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) {
    throw new Error(`refusing to write outside the output dir: ${relativePath}`);
  }
  return full;
}

export function defaultExtension(type: 'image' | 'video'): string {
  return type === 'image' ? 'png' : 'mp4';
}

/** A location written as a URL (`s3://…`, `gs://…`): a scheme, then `://`. */
const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\//i;
/** `s3://BUCKET` or `s3://BUCKET/PREFIX`. */
const BUCKET_URL = /^s3:\/\/([^/]*)(?:\/(.*))?$/;
/** S3's rule for a bucket's name (R2, MinIO and B2 keep it): 3-63 of lower-case letters, digits, dots and hyphens. */
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** A bucket and the prefix (no leading or trailing slash) under which outputs go. */
export interface BucketLocation {
  bucket: string;
  prefix: string;
}

/** The bucket an `s3://` out location names, or undefined when it names none (a folder, or another scheme). */
export function bucketLocationOf(location: string): BucketLocation | undefined {
  const m = BUCKET_URL.exec(location);
  if (!m || !BUCKET_NAME.test(m[1]!)) return undefined;
  const parts = (m[2] ?? '').split('/').filter(Boolean);
  if (parts.some((part) => part === '.' || part === '..')) return undefined;
  return { bucket: m[1]!, prefix: parts.join('/') };
}

/** The location as the state and messages write it: a bucket's URL without a trailing slash, a folder's absolute path. */
export function resolveOutDir(base: string, location: string): string {
  const bucket = bucketLocationOf(location);
  if (bucket) return `s3://${bucket.bucket}${bucket.prefix ? `/${bucket.prefix}` : ''}`;
  return resolve(base, location);
}

/**
 * What is wrong with an out location as written (`--out`, `output.dir`):
 * outputs go to a folder or an S3-compatible bucket (`s3://BUCKET/PREFIX`);
 * another URL would otherwise become a folder named after its scheme
 * (`./gs:/catalog/spring`), and credits would be spent there.
 */
export function outDirProblem(location: string): string | undefined {
  if (!URL_LIKE.test(location)) return undefined;
  if (/^s3:\/\//i.test(location)) {
    if (bucketLocationOf(location)) return undefined;
    const prefix = location.slice(5).split('/');
    if (prefix.some((part, i) => i > 0 && (part === '.' || part === '..')))
      return `${location} has "." or ".." in its prefix; give the prefix as plain names (s3://BUCKET/catalog/spring)`;
    return `${location} does not name a bucket: expected s3://BUCKET/PREFIX, the bucket 3-63 lower-case letters, digits, dots or hyphens`;
  }
  return `${location} is a URL; outputs go to a folder (relative to where it is given, or absolute) or to a bucket (s3://BUCKET/PREFIX)`;
}

/** What a web copy adds to its output's name: its size (`1600w`, `900h`, `1600x900`, `full`) and its format. */
export function webCopySuffix(d: { format: string; width?: number | undefined; height?: number | undefined }): string {
  const size =
    d.width && d.height ? `${d.width}x${d.height}` : d.width ? `${d.width}w` : d.height ? `${d.height}h` : 'full';
  return `${size}.${d.format === 'jpeg' ? 'jpg' : d.format}`;
}

/** A web copy's path beside its output: `hero-1.png` gives `hero-1.1600w.webp`, `hero-1.v2.png` `hero-1.v2.1600w.webp`. */
export function webCopyPath(outputPath: string, d: Parameters<typeof webCopySuffix>[0]): string {
  const dot = outputPath.lastIndexOf('.');
  const slash = Math.max(outputPath.lastIndexOf('/'), outputPath.lastIndexOf('\\'));
  const stem = dot > slash + 1 ? outputPath.slice(0, dot) : outputPath;
  return `${stem}.${webCopySuffix(d)}`;
}
