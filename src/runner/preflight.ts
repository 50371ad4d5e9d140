import type { ManifestTop } from '../manifest/index.js';
import type { ResolvedRunOptions } from '../options/resolve.js';
import type { OutputSink } from '../sink/index.js';
import type { Store } from '../store/index.js';
import type { Stop } from './core/control.js';
import { sha256 } from './core/identity.js';
import { selects } from './feed/selection.js';
import type { FirstSync } from './sync/first-sync.js';
import type { OutputsLease } from './watch/lease.js';

/** What the checks before the first payment read, and the lease they claim. */
export interface PreflightDeps {
  readonly options: Pick<ResolvedRunOptions, 'only' | 'simulate' | 'takeOver'>;
  readonly store: Store;
  readonly manifest: Pick<ManifestTop, 'source'>;
  readonly outputs: Pick<OutputSink, 'probe'>;
  readonly firstSync: Pick<FirstSync, 'all'>;
  readonly lease: Pick<OutputsLease, 'claim'>;
}

/**
 * What must hold before anything is paid for: the output dir takes files,
 * `--only` selects something, and the dir is claimed for this state. When
 * one does not, why the run should stop.
 */
export async function preflight(run: PreflightDeps): Promise<Stop | undefined> {
  const { store, firstSync, lease } = run;
  const unwritable = await run.outputs.probe();
  if (unwritable) {
    await firstSync.all(); // every item in the state, for the summary and the next run
    return {
      kind: 'disk',
      message: `${unwritable.message}. Nothing was submitted. Fix it (or pass --out DIR) and run the same command again: what was already paid for is downloaded then, without paying again.`,
    };
  }
  if (run.options.only && store.queue.select(selects(run.options.only)).length === 0) {
    const only = `--only ${run.options.only.join(' --only ')}`;
    return { kind: 'nothing-selected', message: `${only} matches no item of the manifest: nothing was submitted` };
  }
  // A state that has sent no key yet may take the identity the place records (its state lost, or on another machine).
  const fresh = !store.attempts.anyMade();
  const { source } = run.manifest;
  const owner = {
    state: store.db.name,
    runId: store.meta('run_id')!,
    rehearsal: run.options.simulate,
    manifest: { path: source.absPath, sha256: sha256(source.text) },
  };
  const runId = await lease.claim(owner, fresh, run.options.takeOver);
  if (runId !== owner.runId) store.setMeta('run_id', runId);
  return undefined;
}
