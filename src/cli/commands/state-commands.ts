import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { collectResults, writeResults } from '../../report/results.js';
import { Store, type ItemState } from '../../store/index.js';
import { EXIT, ExitError } from '../exit.js';
import { table } from '../format.js';
import { existingStatePathFor, statePathFor } from '../state-path.js';
import { loadValid } from './manifest-commands.js';

function openState(path: string): Store {
  if (!existsSync(path)) throw new ExitError(EXIT.usage, `no state file at ${path}: nothing has run yet (genbatch run <manifest>), or pass --state PATH`);
  try {
    return Store.openReadOnly(path);
  } catch (error) {
    throw new ExitError(EXIT.incomplete, (error as Error).message);
  }
}

export interface Status {
  manifest: string;
  state: string;
  items: { total: number } & Record<ItemState, number>;
  credits: { charged: number; refunded: number; net: number };
  failures: Record<string, number>;
  inFlight: number;
}

/** Progress from the state file alone: no network. */
export async function statusCommand(path: string, opts: { state?: string; json?: boolean }, cwd: string): Promise<string> {
  const manifest = await loadValid(path, cwd);
  const statePath = existingStatePathFor(manifest, opts.state, cwd);
  const store = openState(statePath);
  try {
    const counts = store.items.counts();
    const { charged, refunded } = store.attempts.totals();
    const failures = store.items.failuresByCode();
    const status: Status = {
      manifest: manifest.source.file,
      state: statePath,
      items: { total: Object.values(counts).reduce((a, b) => a + b, 0), ...counts },
      credits: { charged, refunded, net: charged - refunded },
      failures,
      inFlight: counts.submitting + counts.running,
    };
    if (opts.json) return JSON.stringify(status, null, 2);
    const rows = (Object.entries(counts) as [ItemState, number][]).filter(([, n]) => n > 0).map(([state, n]) => [state, n]);
    const lines = [`${status.manifest}: ${status.items.total} items (state ${statePath})`, table(['state', 'items'], rows), `credits: ${charged} charged, ${refunded} refunded, ${charged - refunded} net`];
    if (Object.keys(failures).length) lines.push(table(['failure', 'items'], Object.entries(failures)));
    return lines.join('\n');
  } finally {
    store.close();
  }
}

/** Puts failed items back with new attempts (by code, if given); blocked items are never resent unchanged. */
export async function retryCommand(path: string, opts: { state?: string; code?: string[] }, cwd: string): Promise<string> {
  const manifest = await loadValid(path, cwd);
  const statePath = statePathFor(manifest, opts.state, cwd);
  if (!existsSync(statePath)) throw new ExitError(EXIT.usage, `no state file at ${statePath}: nothing has run yet`);
  let store: Store;
  try {
    store = Store.open(statePath);
  } catch (error) {
    throw new ExitError(EXIT.incomplete, (error as Error).message);
  }
  try {
    const codes = opts.code?.length ? new Set(opts.code) : undefined;
    const candidates = [...store.items.inState('failed'), ...store.items.inState('skipped'), ...store.items.inState('downloading').filter((i) => i.error_code)];
    let requeued = 0;
    store.tx(() => {
      for (const item of candidates) {
        if (codes && !codes.has(item.error_code ?? '')) continue;
        const attempt = store.attempts.latest(item.id);
        // A submission that may have been accepted is resent with its own key, never a new one.
        const uncertain = attempt && !attempt.job_id && (attempt.status === 'sent' || attempt.status === 'created');
        const state = item.state === 'downloading' ? 'downloading' : uncertain ? 'submitting' : 'pending';
        store.items.setState(item.id, state, Date.now());
        requeued++;
      }
    });
    const blocked = store.items.inState('blocked').length;
    const note = blocked ? `\n${blocked} blocked item(s) stay blocked: change their prompt to resubmit them.` : '';
    return `${requeued} item(s) put back; run the same command (genbatch run) to go on.${note}`;
  } finally {
    store.close();
  }
}

/** Writes results.jsonl and results.csv from the state file alone: no network. */
export async function reportCommand(path: string, opts: { state?: string; out?: string }, cwd: string): Promise<string> {
  const manifest = await loadValid(path, cwd);
  const statePath = existingStatePathFor(manifest, opts.state, cwd);
  const store = openState(statePath);
  try {
    const rows = collectResults(store);
    const written = await writeResults(opts.out ? resolve(cwd, opts.out) : manifest.outputDir, rows);
    return `${rows.length} item(s) written to ${written.jsonl} and ${written.csv}`;
  } finally {
    store.close();
  }
}
