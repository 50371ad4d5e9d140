import { join } from 'node:path';
import { stringify } from 'csv-stringify/sync';
import type { ItemState, Store } from '../store/index.js';
import { writeFileAtomic } from '../util/atomic-write.js';

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
  /** Relative to the output dir. */
  files: { path: string; bytes: number; sha256: string }[];
  jobIds: string[];
  creditsCharged: number;
  creditsRefunded: number;
  errorCode: string | null;
  errorMessage: string | null;
  /** The manifest row's columns and matrix values the item was made from. */
  values: Record<string, string>;
}

export function collectResults(store: Store): ResultRow[] {
  const attempts = groupByItem(store.attempts.factsForReport());
  const outputs = groupByItem(store.outputs.filesForReport());
  return store.items.factsForReport().map((item) => {
    const tries = attempts.get(item.id) ?? [];
    return {
      id: item.id,
      state: item.state,
      type: item.type,
      model: item.model,
      prompt: item.prompt,
      aspectRatio: item.aspect_ratio,
      resolution: item.resolution,
      duration: item.duration,
      files: (outputs.get(item.id) ?? []).map((o) => ({ path: o.path, bytes: o.bytes, sha256: o.sha256 })),
      jobIds: tries.map((t) => t.job_id).filter((j): j is string => Boolean(j)),
      creditsCharged: tries.reduce((s, t) => s + t.charged, 0),
      creditsRefunded: tries.reduce((s, t) => s + t.refunded, 0),
      errorCode: item.error_code,
      errorMessage: item.error_message,
      values: item.values_json ? (JSON.parse(item.values_json) as Record<string, string>) : {},
    };
  });
}

function groupByItem<T extends { item_id: string }>(rows: T[]): Map<string, T[]> {
  const byItem = new Map<string, T[]>();
  for (const row of rows) {
    const list = byItem.get(row.item_id);
    if (list) list.push(row);
    else byItem.set(row.item_id, [row]);
  }
  return byItem;
}

const CSV_COLUMNS = ['id', 'state', 'type', 'model', 'prompt', 'aspect_ratio', 'resolution', 'duration', 'files', 'bytes', 'sha256', 'job_ids', 'credits_charged', 'credits_refunded', 'error_code', 'error_message'];

function csvRecord(r: ResultRow, valueNames: readonly string[]): unknown[] {
  const files = (key: 'path' | 'bytes' | 'sha256') => r.files.map((f) => f[key]).join(' ');
  return [r.id, r.state, r.type, r.model, r.prompt, r.aspectRatio ?? '', r.resolution ?? '', r.duration ?? '', files('path'), files('bytes'), files('sha256'), r.jobIds.join(' '), r.creditsCharged, r.creditsRefunded, r.errorCode ?? '', r.errorMessage ?? '', ...valueNames.map((k) => r.values[k] ?? '')];
}

/** CSV in chunks of rows, so a big run's file is never one string. The rows' own columns (sku, title…) follow ours; one named like ours gets a var_ prefix. */
function* csvChunks(rows: readonly ResultRow[]): Generator<string> {
  const valueNames = [...new Set(rows.flatMap((r) => Object.keys(r.values)))];
  const headers = valueNames.map((k) => (CSV_COLUMNS.includes(k) ? `var_${k}` : k));
  yield stringify([[...CSV_COLUMNS, ...headers]]);
  for (let i = 0; i < rows.length; i += 1000) yield stringify(rows.slice(i, i + 1000).map((r) => csvRecord(r, valueNames)));
}

function* jsonLines(rows: readonly ResultRow[]): Generator<string> {
  for (const r of rows) yield `${JSON.stringify(r)}\n`;
}

/** Writes results.jsonl and results.csv into the output dir, each whole or not at all. */
export async function writeResults(outDir: string, rows: readonly ResultRow[]): Promise<{ jsonl: string; csv: string }> {
  const jsonl = join(outDir, 'results.jsonl');
  const csv = join(outDir, 'results.csv');
  await writeFileAtomic(jsonl, jsonLines(rows));
  await writeFileAtomic(csv, csvChunks(rows));
  return { jsonl, csv };
}
