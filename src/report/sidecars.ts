import { writeWhole, type OutputSink } from '../sink/index.js';
import type { ResultRow } from './results.js';

/** What a sidecar holds: its item's result row, and which of the item's files it sits beside. */
export type Sidecar = ResultRow & { file: ResultRow['files'][number] };

/** The sidecar of an output: the output's own name with `.json` added (outputs never end in .json). */
export const sidecarPathOf = (outputPath: string) => `${outputPath}.json`;

/** Writes a metadata sidecar next to each of these rows' outputs; returns how many. */
export async function writeSidecars(outputs: OutputSink, rows: readonly ResultRow[]): Promise<number> {
  let written = 0;
  for (const row of rows) {
    for (const file of row.files) {
      const sidecar: Sidecar = { ...row, file };
      await writeWhole(outputs, sidecarPathOf(file.path), 'replace', `${JSON.stringify(sidecar, null, 2)}\n`);
      written++;
    }
  }
  return written;
}
