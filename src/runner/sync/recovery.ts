import type { OutputSink } from '../../sink/index.js';
import type { Logger } from '../../log/logger.js';
import type { DownloadingItem, ItemRow, Store } from '../../store/index.js';
import type { KeyRoster } from '../keys/roster.js';
import type { KeyLane, KeyLanes } from '../keys/lanes.js';

/**
 * Picks up where a killed run left off: resend, poll, download. What it
 * costs before the first submission is bounded by the in-flight work, not
 * by what already ran: downloads are queued from one query. The done items'
 * outputs are checked on disk alongside the run (the promise it returns).
 */
export async function recover(deps: {
  readonly store: Store;
  readonly lanes: KeyLanes;
  readonly roster: KeyRoster;
  /** Where the outputs are: what a killed run left half-written is removed, the done items' outputs checked. */
  readonly outputs: OutputSink;
  readonly now: () => number;
  readonly logger?: Logger | undefined;
  /** Aborted on an interrupt: the check of done outputs stops there. */
  readonly signal: AbortSignal;
  startJob(item: ItemRow, lane: KeyLane): void;
  startDownload(item: DownloadingItem, jobId: string): void;
}): Promise<{ verifying: Promise<void> }> {
  const { store, roster, lanes, now } = deps;
  await deps.outputs.cleanUp();
  for (const state of ['queued', 'submitting', 'maybe_accepted', 'running'] as const) {
    // A submission sent by a killed run may be a job running on the service: its task starts now and holds its slot,
    // waiting for the time of a resend deferred to later; a slot given to a new item meanwhile would be one too many.
    // An item the manifest dropped before its attempt was sent is never sent; one sent may be paid for, so it goes on.
    for (const item of store.queue.inState(state)) {
      const lane = roster.laneOf(item);
      const due = item.not_before <= now() || state === 'submitting';
      if (lane && due && !(item.removed && state === 'queued')) deps.startJob(item, lane);
    }
  }
  for (const { item, job_id, key_fp } of store.queue.downloadsToResume()) {
    // A key this run lacks: the roster holds the item for a run with it, and says so.
    const lane = key_fp ? lanes.get(key_fp) : lanes.all[0];
    if (lane || roster.laneOf(item)) deps.startDownload(item, job_id);
  }
  return { verifying: verifyDone(deps) };
}

/** Done items' outputs as they are on disk: one gone, or not what was paid for, is downloaded again from a fresh link (or reported when none can be had). */
async function verifyDone(deps: Parameters<typeof recover>[0]): Promise<void> {
  const { store, now } = deps;
  // Started once every output of the item is marked: a download started at its first missing one would not fetch the others.
  const again = new Map<string, string>();
  // Only the latest job's outputs are the item's: rows an older state kept of a replaced job are passed over.
  for (const out of store.queue.doneOutputs()) {
    if (deps.signal.aborted) return;
    const check =
      out.path && out.bytes !== null && out.sha256
        ? await deps.outputs.check({
            path: out.path,
            bytes: out.bytes,
            sha256: out.sha256,
            mtime_ms: out.mtime_ms,
            published: out.published_at !== null,
          })
        : { verdict: 'missing' as const };
    if (check.verdict === 'same-bytes') store.outputFiles.stillVerified(out.job_id, out.idx, check.mtimeMs);
    else if (check.verdict !== 'unchanged' && !publishedSince(store, out)) {
      deps.logger?.warn({ item: out.item_id, output: out.path, verdict: check.verdict }, 'output not as verified');
      // Back to downloading: one download fetches every output the item lacks.
      if (store.lifecycle.outputMissing(out.item_id, out.job_id, out.idx, now())) again.set(out.item_id, out.job_id);
    }
  }
  // Read once it is back to downloading: the download takes the item as it is now.
  for (const [itemId, jobId] of again) deps.startDownload(store.items.get(itemId)!, jobId);
}

/**
 * Published since the rows were read (the publisher works alongside, and
 * removes a local file once its object is verified): not lost, whatever the
 * look at its local file found.
 */
function publishedSince(store: Store, out: { job_id: string; idx: number; published_at: number | null }) {
  if (out.published_at !== null) return false;
  return store.outputFiles.ofJob(out.job_id).some((o) => o.idx === out.idx && o.published_at !== null);
}
