import { locate } from '../manifest/load-valid.js';
import { listKeyJobs, type KeyListing } from '../reconcile/listing.js';
import { reconcile, type ReconcileReport } from '../reconcile/reconcile.js';
import { DEFAULT_KEY_LIMITS } from '../scheduler/limits.js';
import type { AttemptForReconcile, ItemEcho } from '../store/index.js';
import { existingStatePathFor, openStateReadOnly } from '../store/state-path.js';
import { connect } from './connection.js';
import type { StateChoice } from './state.js';

export type { ReconcileReport } from '../reconcile/reconcile.js';

/**
 * The state compared with the service's job list, for every key given:
 * nothing is submitted and nothing changes.
 */
export async function reconcileState(
  path: string,
  options: StateChoice & Parameters<typeof connect>[0],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ state: string; report: ReconcileReport }> {
  const manifest = await locate(path, cwd);
  const statePath = existingStatePathFor(
    manifest,
    { ...options, baseUrl: options.baseUrl ?? env.GENBATCH_BASE_URL },
    cwd,
  );
  const store = openStateReadOnly(statePath);
  let known: { attempts: AttemptForReconcile[]; items: ItemEcho[] };
  let firstSession: number | undefined;
  try {
    known = { attempts: store.attempts.forReconcile(), items: store.itemReports.echoes() };
    firstSession = store.runs.all()[0]?.started_at;
  } finally {
    store.close();
  }
  const connection = await connect(options, env);
  const listings: KeyListing[] = [];
  try {
    for (const { fingerprint, client } of connection.keys)
      listings.push(await listKeyJobs(client, fingerprint, DEFAULT_KEY_LIMITS.read));
  } finally {
    await connection.close();
  }
  return { state: statePath, report: reconcile(known.attempts, known.items, listings, firstSession, Date.now()) };
}
