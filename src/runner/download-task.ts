import { backoffMs, policy, type Job } from '../api/index.js';
import { DownloadError, downloadOutput } from '../download/download.js';
import { outputRelativePath } from '../manifest/index.js';
import { sleep } from '../util/clock.js';
import type { RunContext } from './context.js';
import type { KeyLane } from './lanes.js';

const MAX_LINK_REFRESHES = 5;

/**
 * Downloads a completed job's outputs. A failing or expired link is refreshed
 * by a new GET of the job; a download that cannot finish leaves the item
 * `downloading` for the next resume, and never leads to a resubmission.
 * Links are refreshed with the key of the job's attempt (`lane`); without it
 * (the key left the run) only the links at hand are tried.
 */
export async function downloadJob(
  ctx: RunContext,
  lane: KeyLane | undefined,
  itemId: string,
  jobId: string,
  fresh?: Job,
): Promise<void> {
  const { store, opts, manifest } = ctx;
  const item = store.items.get(itemId)!;
  let job = fresh;
  let lastError = '';
  let lastCode = 'DOWNLOAD_FAILED';
  for (let refresh = 0; refresh <= MAX_LINK_REFRESHES; refresh++) {
    if (ctx.abort.signal.aborted) return;
    if (!job) {
      if (!lane?.active) {
        lastError ||= 'the key that owns the job is not in this run (or was refused), so its links cannot be refreshed';
        lastCode = 'KEY_REFUSED';
        break;
      }
      let sentAt = opts.now();
      try {
        const { client } = lane;
        if (!(await ctx.reachability.ready(ctx.abort.signal))) return;
        job = await lane.buckets.read.run(() => {
          sentAt = opts.now();
          return client.getJob(jobId, 0, ctx.abort.signal);
        }, ctx.abort.signal);
      } catch (error) {
        if (ctx.abort.signal.aborted) return;
        // An outage is waited out: it costs the download none of its refreshes.
        const noAnswer = await ctx.reachability.noAnswer(sentAt, error, ctx.abort.signal);
        if (noAnswer === 'stopped') return;
        if (noAnswer === 'outage') {
          refresh--;
          continue;
        }
        const reaction = policy('read-job', error);
        lastError = (error as Error).message;
        lastCode = (error as { code?: string }).code ?? lastCode;
        if (reaction.do === 'stop-run') {
          if (reaction.scope === 'account') ctx.stop('refused', `${lastError}\n${reaction.hint}`);
          else ctx.keyRefused(lane, { code: lastCode, message: lastError }, reaction.hint);
          break;
        }
        if (reaction.do === 'keep-job' || reaction.do === 'mark-item') break;
        if (reaction.do === 'wait-and-resend')
          lane.buckets.read.pauseFor((error as { retryAfterMs?: number }).retryAfterMs ?? ctx.scaled(1000));
        else await sleep(ctx.scaled(backoffMs(refresh, 1000)));
        continue;
      }
    }
    const have = new Map(store.outputs.ofJob(jobId).map((o) => [o.idx, o]));
    const missing = [...job.outputs.entries()].filter(([i]) => !have.get(i + 1)?.sha256);
    let complete = job.outputs.length > 0;
    for (const [k, [i, output]] of missing.entries()) {
      const idx = i + 1;
      try {
        const file = await downloadOutput(
          ctx.storage,
          output.downloadUrl,
          opts.outDir,
          item.type,
          (ext) => {
            const name = outputRelativePath(manifest.outputName, {
              id: item.id,
              n: idx,
              ext,
              model: item.model,
              type: item.type,
              vars: manifest.vars,
            });
            if (!name.ok) throw new DownloadError(name.message, false, 'BAD_NAME');
            const owner = store.outputs.ownerOf(name.path);
            if (owner && owner.item_id !== item.id) {
              throw new DownloadError(
                `output ${idx} would be saved as ${name.path}, which holds the output of ${owner.item_id}; it is not overwritten. Put {{n}} in output.name (as in the default "{{id}}-{{n}}.{{ext}}") and run again`,
                false,
                'NAME_TAKEN',
              );
            }
            store.outputs.claimPath(jobId, idx, itemId, name.path, opts.now());
            return name.path;
          },
          ctx.abort.signal,
          opts.maxOutputBytes,
          opts.openOutput,
        );
        // The last missing output and the item's move to done share one commit.
        const last = k === missing.length - 1;
        if (store.life.outputSaved(itemId, jobId, idx, file, opts.now(), last))
          ctx.emit({ kind: 'item-final', itemId, state: 'done' });
        if (last) {
          ctx.downloadEnded(undefined);
          return;
        }
      } catch (error) {
        if (ctx.abort.signal.aborted) return;
        lastError = (error as Error).message;
        lastCode = error instanceof DownloadError ? error.code : lastCode;
        opts.logger?.warn({ item: itemId, job: jobId, output: idx, error: lastError }, 'download failed');
        complete = false;
        if (error instanceof DownloadError && !error.refreshable) {
          store.life.downloadFailed(itemId, { code: 'DOWNLOAD_FAILED', message: lastError }, opts.now());
          ctx.emit({ kind: 'item-final', itemId, state: 'downloading', code: 'DOWNLOAD_FAILED', message: lastError });
          ctx.downloadEnded({
            code: error.code,
            message: lastError,
            disk: error.diskCode !== undefined,
            itemOnly: error.itemOnly,
          });
          return;
        }
        break;
      }
    }
    // Every output was already on disk (a resumed download that had saved them all).
    if (complete) {
      if (store.life.downloaded(itemId, opts.now())) ctx.emit({ kind: 'item-final', itemId, state: 'done' });
      ctx.downloadEnded(undefined);
      return;
    }
    job = undefined; // fetch fresh links
  }
  store.life.downloadFailed(
    itemId,
    { code: 'DOWNLOAD_FAILED', message: lastError || 'the job lists no outputs' },
    opts.now(),
  );
  ctx.emit({ kind: 'item-final', itemId, state: 'downloading', code: 'DOWNLOAD_FAILED', message: lastError });
  ctx.downloadEnded({ code: lastCode, message: lastError || 'the job lists no outputs', disk: false, itemOnly: false });
}
