import { stringify } from 'csv-stringify/sync';
import type { WebCopyRow, ItemFacts, ItemState, ReviewDecision, Store } from '../store/index.js';

/** One row per item: what users hand to the next tool instead of reading SQLite. */
export interface ResultRow {
  id: string;
  state: ItemState;
  type: 'image' | 'video';
  model: string;
  prompt: string;
  aspectRatio: string | null;
  resolution: string | null;
  /** Seconds, for a video. */
  duration: string | null;
  /** The current version's outputs, relative to the output dir. */
  files: { path: string; bytes: number; sha256: string; url?: string; derivatives?: WebCopyFact[] }[];
  /** The current version (1, or higher once the item was regenerated); null before any output is on disk. (Every row the report writes has it, as `versions`.) */
  version?: number | null;
  /** Every version on disk, oldest first: a regeneration never overwrites the outputs it replaces. */
  versions?: OutputVersion[];
  /** The review decision on the current version (genbatch review), or null while it is unreviewed. */
  review?: ReviewNote | null;
  jobIds: string[];
  creditsCharged: number;
  creditsRefunded: number;
  errorCode: string | null;
  errorMessage: string | null;
  /** Why it is not done where that is not a failure: what a waiting item waits for, why a skipped one was skipped. */
  reason?: string | null;
  /** Who took the current version's decision, and when (ISO 8601); null while it has none. */
  decidedBy?: string | null;
  decidedAt?: string | null;
  /** The manifest row's columns and matrix values the item was made from. */
  values: Record<string, string>;
  /** The item's tags (every row the report writes has them; a row made by hand may leave them out). */
  tags?: string[];
}

/** One generation of an item's outputs: its job, its files on disk, and whether it is the current one. */
export interface OutputVersion {
  version: number;
  jobId: string;
  files: string[];
  current: boolean;
  /** Its review decision, if it had one. */
  review?: ReviewNote;
}

/** A review decision as the results files carry it. */
export interface ReviewNote {
  version: number;
  decision: ReviewDecision;
  note: string | null;
  /** When it was decided (ms since the epoch). */
  at: number;
  /** Who decided: a person's name, "timeout", "checks", or "unknown" (decided before the record kept names). */
  by: string;
  /** Taken by the manifest's checks (the reason is the note), not by a person. */
  byCheck?: true;
  /** Taken by a gate's approval timeout (the manifest's approval), not by a person. */
  byTimeout?: true;
}

/**
 * How many items a page of the report holds: memory stays flat whatever the
 * state's size. Small enough that a page is garbage before the young
 * generation is collected: pages of 1,000 lived across the writes' awaits, were
 * promoted, and after a first start's validation (which leaves the old
 * generation's limit high) the report of 100,000 items peaked at 290 MB
 * (206 MB with 200, and 20% faster).
 */
const PAGE_SIZE = 200;

/**
 * The result rows a page at a time, in manifest order. Each page is its own
 * query, so the caller may await between pages (a cursor held open across an
 * await would block every other statement on the connection).
 */
export function* resultPages(store: Store, pageSize = PAGE_SIZE): Generator<ResultRow[]> {
  let after = { seq: -1, row: 0 };
  for (;;) {
    const facts = store.itemReports.reportPage(after.seq, after.row, pageSize);
    if (facts.length === 0) return;
    const last = facts[facts.length - 1]!;
    after = { seq: last.seq, row: last.row };
    yield facts.map(resultRow);
  }
}

type FileFact = [
  path: string,
  bytes: number,
  sha256: string,
  version: number,
  jobId: string,
  current: 0 | 1,
  /** The object it was published to (outputs going to a bucket). */
  url: string | null,
  /** Its web copies: path, format, width, height, bytes, sha256. */
  derivatives: [string, string, number, number, number, string][],
];

/** A web copy of an output, as the results list it: what the state recorded of it when it was written. */
export type WebCopyFact = Pick<WebCopyRow, 'path' | 'format' | 'width' | 'height' | 'bytes' | 'sha256'>;

type ReviewFact = [
  version: number,
  decision: ReviewDecision,
  note: string | null,
  at: number,
  kind: string,
  by: string | null,
];

function versionsOf(files: readonly FileFact[], reviews: ReadonlyMap<number, ReviewNote>): OutputVersion[] {
  const versions: OutputVersion[] = [];
  for (const [path, , , version, jobId, current] of files) {
    const last = versions.at(-1);
    if (last?.version === version) last.files.push(path);
    else {
      const review = reviews.get(version);
      versions.push({ version, jobId, files: [path], current: current === 1, ...(review ? { review } : {}) });
    }
  }
  return versions;
}

function reviewsOf(json: string): Map<number, ReviewNote> {
  const facts = JSON.parse(json) as ReviewFact[];
  return new Map(
    facts.map(([version, decision, note, at, kind, by]) => [
      version,
      {
        version,
        decision,
        note,
        at,
        by: kind === 'check' ? 'checks' : kind === 'timeout' ? 'timeout' : (by ?? 'unknown'),
        ...(kind === 'check' ? { byCheck: true as const } : kind === 'timeout' ? { byTimeout: true as const } : {}),
      },
    ]),
  );
}

function reasonOf(item: ItemFacts): string | null {
  if (item.state === 'skipped') return item.error_message;
  if (item.state !== 'waiting') return null;
  const gates = JSON.parse(item.gates_json ?? '[]') as string[];
  return `waits for a decision on ${gates.length === 1 ? 'its gate' : 'its gates'} ${gates.join(', ')}`;
}

function resultRow(item: ItemFacts): ResultRow {
  const all = JSON.parse(item.files) as FileFact[];
  const files = all.filter((f) => f[5] === 1);
  const version = files[0]?.[3] ?? null;
  const reviews = reviewsOf(item.reviews);
  const current = (version !== null && reviews.get(version)) || null;
  return {
    id: item.id,
    state: item.state,
    type: item.type,
    model: item.model,
    prompt: item.prompt,
    aspectRatio: item.aspect_ratio,
    resolution: item.resolution,
    duration: item.duration,
    files: files.map(([path, bytes, sha256, , , , url, copies]) => ({
      path,
      bytes,
      sha256,
      ...(url ? { url } : {}),
      ...(copies.length
        ? {
            derivatives: copies.map(([path, format, width, height, bytes, sha256]) => ({
              path,
              format,
              width,
              height,
              bytes,
              sha256,
            })),
          }
        : {}),
    })),
    version,
    versions: versionsOf(all, reviews),
    review: current,
    decidedBy: current?.by ?? null,
    decidedAt: current ? new Date(current.at).toISOString() : null,
    jobIds: JSON.parse(item.job_ids) as string[],
    creditsCharged: item.charged,
    creditsRefunded: item.refunded,
    errorCode: item.error_code,
    errorMessage: item.error_message,
    reason: reasonOf(item),
    values: item.values_json ? (JSON.parse(item.values_json) as Record<string, string>) : {},
    tags: item.tags_json ? (JSON.parse(item.tags_json) as string[]) : [],
  };
}

/** What a report says of all items before it lists them: counts, models, and the rows' own column names. */
export interface ResultSummary {
  items: number;
  states: ReadonlyMap<ItemState, number>;
  /** Model → items, in the order models first appear. */
  models: ReadonlyMap<string, number>;
  valueNames: readonly string[];
}

export function summarizeStore(store: Store): ResultSummary {
  const states = new Map<ItemState, number>();
  const models = new Map<string, number>();
  let items = 0;
  for (const { state, model, n } of store.itemReports.reportTally()) {
    items += n;
    states.set(state, (states.get(state) ?? 0) + n);
    models.set(model, (models.get(model) ?? 0) + n);
  }
  return { items, states, models, valueNames: store.itemReports.valueNames() };
}

/** The same summary of rows already in hand. */
export function summarizeRows(rows: readonly ResultRow[]): ResultSummary {
  const states = new Map<ItemState, number>();
  const models = new Map<string, number>();
  const valueNames = new Set<string>();
  for (const r of rows) {
    states.set(r.state, (states.get(r.state) ?? 0) + 1);
    models.set(r.model, (models.get(r.model) ?? 0) + 1);
    for (const k of Object.keys(r.values)) valueNames.add(k);
  }
  return { items: rows.length, states, models, valueNames: [...valueNames] };
}

const CSV_COLUMNS = [
  'id',
  'state',
  'type',
  'model',
  'prompt',
  'aspect_ratio',
  'resolution',
  'duration',
  'files',
  'bytes',
  'sha256',
  'job_ids',
  'credits_charged',
  'credits_refunded',
  'error_code',
  'error_message',
  'tags',
  'version',
  'earlier_files',
  'review',
  'review_note',
  'objects',
  'derivatives',
];

function csvRecord(r: ResultRow, valueNames: readonly string[]): unknown[] {
  const files = (key: 'path' | 'bytes' | 'sha256') => r.files.map((f) => f[key]).join(' ');
  return [
    r.id,
    r.state,
    r.type,
    r.model,
    r.prompt,
    r.aspectRatio ?? '',
    r.resolution ?? '',
    r.duration ?? '',
    files('path'),
    files('bytes'),
    files('sha256'),
    r.jobIds.join(' '),
    r.creditsCharged,
    r.creditsRefunded,
    r.errorCode ?? '',
    r.errorMessage ?? '',
    (r.tags ?? []).join(' '),
    r.version ?? '',
    (r.versions ?? [])
      .filter((v) => !v.current)
      .flatMap((v) => v.files)
      .join(' '),
    r.review?.decision ?? '',
    plain(r.review?.note ?? ''),
    r.files
      .map((f) => f.url ?? '')
      .join(' ')
      .trim(),
    r.files.flatMap((f) => (f.derivatives ?? []).map((d) => d.path)).join(' '),
    ...valueNames.map((k) => r.values[k] ?? ''),
    // Added after the row values: a column is only ever added at the end.
    plain(r.reason ?? ''),
    plain(r.decidedBy ?? ''),
    r.decidedAt ?? '',
  ];
}

/** A person's text in one cell: control bytes (a terminal's escapes, line breaks) become spaces. */
const plain = (text: string) => text.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');

/**
 * A text cell a spreadsheet would take for a formula (CSV injection,
 * CWE-1236): one that starts with =, +, @, a tab or a carriage return, or
 * with - before something that is not a number. Written with a leading ' it
 * is shown as the text it is; numbers (-5, -2.5e3) stay numbers.
 */
export function spreadsheetSafe(text: string): string {
  const first = text[0];
  if (first === '=' || first === '+' || first === '@' || first === '\t' || first === '\r') return `'${text}`;
  if (first === '-' && !Number.isFinite(Number(text))) return `'${text}`;
  return text;
}

/** The columns after the row values (added since): a value column of the same name gets the prefix too. */
const AFTER_VALUES = ['reason', 'decided_by', 'decided_at'];

/**
 * Every string cell made safe to open in a spreadsheet, and to print: no control byte (a terminal's escape) is
 * written raw; tabs and line breaks stay text. Numbers are written as they are.
 */
const SAFE = { cast: { string: (text: string) => spreadsheetSafe(text.replace(CONTROLS, ' ')) } };
const CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g;

/** The CSV's header: our columns, then the rows' own (sku, title…); one named like ours gets a var_ prefix. */
export function csvHeader(valueNames: readonly string[]): string {
  const values = valueNames.map((k) => (CSV_COLUMNS.includes(k) || AFTER_VALUES.includes(k) ? `var_${k}` : k));
  return stringify([[...CSV_COLUMNS, ...values, 'reason', 'decided_by', 'decided_at']], SAFE);
}

export function csvLines(rows: readonly ResultRow[], valueNames: readonly string[]): string {
  return stringify(
    rows.map((r) => csvRecord(r, valueNames)),
    SAFE,
  );
}

export function jsonLines(rows: readonly ResultRow[]): string {
  return rows.map((r) => `${JSON.stringify(r)}\n`).join('');
}
