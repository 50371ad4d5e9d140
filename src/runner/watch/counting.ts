import type { EventBus } from '../../util/event-bus.js';
import type { Logger } from '../../log/logger.js';
import type { CounterDelta, CounterName, Store } from '../../store/index.js';
import type { RunEvent } from '../core/events.js';

/** How often the counts heard are added to the state: a scrape sees them this late at most. */
const FLUSH_MS = 1_000;

/**
 * What `genbatch metrics` counts that the state does not otherwise hold:
 * submissions sent, 429s by code, failed downloads and publications,
 * watchdog stalls, and the seconds of outages and of stalled transfers.
 * Heard from the run's events, added to the state each second in one
 * transaction and once more when the run ends, so the figures span restarts.
 */
export function countEvents(
  store: Store,
  events: EventBus<RunEvent>,
  now: () => number,
  logger: Logger | undefined,
): () => void {
  const pending = new Map<string, CounterDelta>();
  const add = (name: CounterName, keyFp: string, label: string, value: number) => {
    const id = `${name}\0${keyFp}\0${label}`;
    const delta = pending.get(id);
    if (delta) delta.value += value;
    else pending.set(id, { name, keyFp, label, value });
  };
  const stopHearing = events.on((event) => {
    const counted = countOf(event, now);
    if (counted) add(counted.name, counted.keyFp ?? '', counted.label ?? '', counted.value ?? 1);
  });
  const flush = () => {
    if (pending.size === 0) return;
    const deltas = [...pending.values()];
    pending.clear();
    try {
      store.counters.add(deltas);
    } catch (error) {
      // Figures for a dashboard never stop a run: lost ones are said in the log.
      logger?.warn({ err: error, counts: deltas.length }, 'counts for metrics not written');
    }
  };
  const timer = setInterval(flush, FLUSH_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    stopHearing();
    flush();
  };
}

type Counted = { name: CounterName; keyFp?: string; label?: string; value?: number } | undefined;

function countOf(event: RunEvent, now: () => number): Counted {
  switch (event.kind) {
    case 'submitted':
      return { name: 'submissions', keyFp: event.keyFp };
    case 'rate-limited':
      return { name: 'rate_limited', keyFp: event.keyFp, label: event.code };
    case 'download-failed':
      return { name: 'download_failures', label: event.code };
    case 'publish-failed':
      return { name: 'publish_failures', label: event.code };
    case 'stall':
      return { name: 'stalls' };
    case 'outage':
      return event.phase === 'up' ? { name: 'outage_seconds', value: (now() - event.since) / 1000 } : undefined;
    case 'bucket-outage':
      return event.phase === 'up' ? { name: 'bucket_outage_seconds', value: (now() - event.since) / 1000 } : undefined;
    case 'transfer-stall-ended':
      return { name: 'stalled_transfer_seconds', value: event.stalledMs / 1000 };
    default:
      return undefined;
  }
}
