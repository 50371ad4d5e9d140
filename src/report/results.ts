import { join } from 'node:path';
import { stringify } from 'csv-stringify/sync';
import type { ItemSpec } from '../runner/bodies.js';
import type { ItemState, Store } from '../store/index.js';
import { writeFileAtomic } from '../util/atomic-write.js';

/** One row per item: what users hand to the next tool instead of reading SQLite. */
export interface ResultRow {
  id: string;
  state: ItemState;
  type: 'image' | 'video';
  model: string;
  prompt: string;
  /** Relative to the output dir. */
  files: { path: string; bytes: number; sha256: string }[];
  jobIds: string[];
  creditsCharged: number;
  creditsRefunded: number;
  errorCode: string | null;
  errorMessage: string | null;
}

export function collectResults(store: Store): ResultRow[] {
  const attempts = groupByItem(store.attempts.all());
  const outputs = groupByItem(store.outputs.all());
  return store.items.all().map((item) => {
    const spec = JSON.parse(item.spec) as ItemSpec;
    const tries = attempts.get(item.id) ?? [];
    return {
      id: item.id,
      state: item.state,
      type: item.type,
      model: item.model,
      prompt: spec.prompt,
      files: (outputs.get(item.id) ?? []).filter((o) => o.path && o.sha256).map((o) => ({ path: o.path!, bytes: o.bytes!, sha256: o.sha256! })),
      jobIds: tries.map((t) => t.job_id).filter((j): j is string => Boolean(j)),
      creditsCharged: tries.reduce((s, t) => s + t.charged, 0),
      creditsRefunded: tries.reduce((s, t) => s + t.refunded, 0),
      errorCode: item.error_code,
      errorMessage: item.error_message,
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

/** Writes results.jsonl and results.csv into the output dir, each whole or not at all (temp file, then rename). */
export async function writeResults(outDir: string, rows: readonly ResultRow[]): Promise<{ jsonl: string; csv: string }> {
  const jsonl = join(outDir, 'results.jsonl');
  const csv = join(outDir, 'results.csv');
  const csvText = stringify(
    rows.map((r) => [r.id, r.state, r.type, r.model, r.prompt, r.files.map((f) => f.path).join(' '), r.files.map((f) => f.bytes).join(' '), r.files.map((f) => f.sha256).join(' '), r.jobIds.join(' '), r.creditsCharged, r.creditsRefunded, r.errorCode ?? '', r.errorMessage ?? '']),
    { header: true, columns: ['id', 'state', 'type', 'model', 'prompt', 'files', 'bytes', 'sha256', 'job_ids', 'credits_charged', 'credits_refunded', 'error_code', 'error_message'] },
  );
  await writeFileAtomic(jsonl, rows.map((r) => JSON.stringify(r)).join('\n') + (rows.length ? '\n' : ''));
  await writeFileAtomic(csv, csvText);
  return { jsonl, csv };
}
