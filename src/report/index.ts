import type { ItemSpec } from '../manifest/index.js';
import type { Store } from '../store/index.js';
import type { OutputSink, SinkWriter } from '../sink/index.js';
import { galleryCard, galleryHead, galleryTail, type GalleryHeader } from './gallery.js';
import { postersFor, type InlinedPosters, type PosterSource } from './posters.js';
import { csvHeader, csvLines, jsonLines, resultPages, summarizeStore, type ResultSummary } from './results.js';
import { pages } from './pages.js';
import { runSeries } from './series.js';
import { writeSidecars } from './sidecars.js';
import { runSeconds } from './status.js';

export { resultPages, summarizeStore, type ResultRow } from './results.js';
export { collectStatus } from './status.js';
export { renderGallery } from './gallery.js';

export interface ReportOptions {
  title: string;
  /** Also write index.html, the gallery. */
  html: boolean;
  /** Also write a metadata sidecar next to each output. */
  sidecars: boolean;
  now: number;
  /** The run's budget, drawn in the gallery's credits plot. */
  budget?: number | null | undefined;
}

export interface WrittenReport {
  items: number;
  jsonl: string;
  csv: string;
  html?: string;
  sidecars?: number;
}

/**
 * Everything a finished (or stopped) run leaves for people and tools, from the
 * state file alone: one pass over the items a page at a time (never all of
 * them in memory), each file put in place whole or not at all.
 */
export async function writeReport(store: Store, outputs: OutputSink, options: ReportOptions): Promise<WrittenReport> {
  const summary = summarizeStore(store);
  const files: SinkWriter[] = [];
  const open = async (name: string) => {
    const file = await outputs.create(name, 'replace');
    files.push(file);
    return file;
  };
  try {
    const jsonl = await open('results.jsonl');
    const csv = await open('results.csv');
    const html = options.html ? await open('index.html') : undefined;
    const written: WrittenReport = {
      items: summary.items,
      jsonl: jsonl.location,
      csv: csv.location,
      ...(html ? { html: html.location } : {}),
      ...(options.sidecars ? { sidecars: 0 } : {}),
    };
    await csv.write(csvHeader(summary.valueNames));
    if (html) await html.write(galleryHead(await galleryHeader(store, summary, options)));
    const posters = posterSource(store);
    let first = true;
    for (const rows of resultPages(store)) {
      await jsonl.write(jsonLines(rows));
      await csv.write(csvLines(rows, summary.valueNames));
      if (options.sidecars) written.sidecars! += await writeSidecars(outputs, rows);
      if (html) {
        const drawn = await postersFor(rows, posters.source, posters.inlined);
        await html.write(`${first ? '' : ','}${rows.map((r) => galleryCard(r, drawn.get(r.id))).join(',')}`);
      }
      first = false;
    }
    if (html) await html.write(galleryTail(await pages()));
    for (const file of files) await file.commit();
    return written;
  } catch (error) {
    await Promise.all(files.map((f) => f.abort()));
    throw error;
  }
}

async function galleryHeader(store: Store, summary: ResultSummary, options: ReportOptions): Promise<GalleryHeader> {
  const sessions = store.runs.all();
  const series = runSeries(store, options.budget ?? null);
  const { charged, refunded } = store.attempts.totals();
  return {
    title: options.title,
    generatedAt: options.now,
    summary,
    credits: { charged, refunded, net: charged - refunded },
    failures: store.itemReports.failuresByCode(),
    run: { seconds: runSeconds(sessions), sessions: sessions.length },
    tags: store.itemReports.byTag().map((t) => ({ tag: t.tag, items: t.items, net: t.charged - t.refunded })),
    decisions: store.gates.decisions(),
    code: await pages(),
    ...(series.t.length ? { plots: series } : {}),
  };
}

/** Posters drawn from the state; an input inlined once however many videos start from it. */
function posterSource(store: Store): { source: PosterSource; inlined: InlinedPosters } {
  const source: PosterSource = {
    specOf: (id) => {
      const spec = store.items.specOf(id);
      return spec === undefined ? undefined : (JSON.parse(spec) as ItemSpec);
    },
    firstFileOf: (id) => store.outputFiles.firstFileOf(id),
  };
  return { source, inlined: new Map() };
}
