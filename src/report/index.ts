import { join } from 'node:path';
import type { ItemSpec } from '../runner/bodies.js';
import type { Store } from '../store/index.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { galleryChunks } from './gallery.js';
import { postersFor } from './posters.js';
import { collectResults, writeResults } from './results.js';
import { writeSidecars } from './sidecars.js';
import { runSeconds } from './status.js';

export { collectResults, writeResults, type ResultRow } from './results.js';
export { collectStatus, liveEta, type Status } from './status.js';
export { renderGallery, type GalleryInput } from './gallery.js';
export { sidecarPathOf, writeSidecars, type Sidecar } from './sidecars.js';

export interface ReportOptions {
  title: string;
  /** Also write index.html, the gallery. */
  html: boolean;
  /** Also write a metadata sidecar next to each output. */
  sidecars: boolean;
  now: number;
}

export interface WrittenReport {
  items: number;
  jsonl: string;
  csv: string;
  html?: string;
  sidecars?: number;
}

/** Everything a finished (or stopped) run leaves for people and tools, from the state file alone. */
export async function writeReport(store: Store, outDir: string, opts: ReportOptions): Promise<WrittenReport> {
  const rows = collectResults(store);
  const written: WrittenReport = { items: rows.length, ...(await writeResults(outDir, rows)) };
  if (opts.sidecars) written.sidecars = await writeSidecars(outDir, rows);
  if (opts.html) {
    const specs = new Map(store.items.specsOf('video').map((i) => [i.id, JSON.parse(i.spec) as ItemSpec]));
    const sessions = store.runs.all();
    const { charged, refunded } = store.attempts.totals();
    const page = galleryChunks({
      title: opts.title,
      generatedAt: opts.now,
      rows,
      posters: await postersFor(rows, specs),
      credits: { charged, refunded, net: charged - refunded },
      failures: store.items.failuresByCode(),
      run: { seconds: runSeconds(sessions), sessions: sessions.length },
    });
    written.html = join(outDir, 'index.html');
    await writeFileAtomic(written.html, page);
  }
  return written;
}
