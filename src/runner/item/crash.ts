import type { Logger } from '../../log/logger.js';
import type { Store } from '../../store/index.js';

/**
 * A task threw what no policy foresaw. A paid job is not ended on a bug of
 * ours: the item keeps its state with the error noted, and the run goes on.
 * Called inside a .catch, so it must not throw itself.
 */
export function recordCrash(
  store: Store,
  options: { now: () => number; logger?: Logger | undefined },
  itemId: string,
  error: unknown,
): void {
  const message = `unexpected error: ${(error as Error)?.message ?? String(error)}`;
  try {
    options.logger?.error({ item: itemId, err: error }, 'unexpected error');
    const item = store.items.get(itemId);
    if (item) store.lifecycle.crashed(itemId, item.state, { code: 'INTERNAL', message }, options.now());
  } catch (secondary) {
    options.logger?.error({ item: itemId, err: secondary }, 'could not record an unexpected error');
  }
}
