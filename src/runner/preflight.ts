import type { Store } from '../store/index.js';
import type { Control } from './core/control.js';
import type { FirstSync } from './sync/first-sync.js';
import type { RunOptions } from './options.js';
import { selects } from './feed/selection.js';

/**
 * What must hold before anything is paid for: the output dir takes files,
 * `--only` selects something, and the dir is claimed for this state. False
 * (the run stopped, saying why) when one does not.
 */
export async function preflight(
  store: Store,
  opts: RunOptions,
  control: Control,
  firstSync: FirstSync,
): Promise<boolean> {
  const unwritable = await opts.outputs.probe();
  if (unwritable) {
    await firstSync.all(); // every item in the state, for the summary and the next run
    control.stop(
      'disk',
      `${unwritable.message}. Nothing was submitted. Fix it (or pass --out DIR) and run the same command again: what was already paid for is downloaded then, without paying again.`,
    );
    return false;
  }
  if (opts.only && store.queue.select(selects(opts.only)).length === 0) {
    const only = `--only ${opts.only.join(' --only ')}`;
    control.stop('nothing-selected', `${only} matches no item of the manifest: nothing was submitted`);
    return false;
  }
  await opts.outputs.claim({
    state: store.db.name,
    runId: store.meta('run_id')!,
    rehearsal: opts.rehearsal ?? false,
  });
  return true;
}
