import { openSqlite, type Db } from '../../src/store/driver.js';
import type { LedgerEvent } from '../../src/simulator/index.js';
import type { TestSim } from './sim.js';

type Request = Extract<LedgerEvent, { kind: 'request' }>;

export const posts = (t: TestSim, since = 0) =>
  t.sim.service.ledger
    .of('request')
    .filter((r): r is Request => r.method === 'POST' && r.path === '/images' && r.at >= since);

/** When the outage that starts at charge `atCharge` ends: the first request the service sees after it. */
export function watchOutage(t: TestSim): { backAt: () => number | undefined } {
  let backAt: number | undefined;
  let wasDown = false;
  const unwatch = t.sim.service.ledger.watch(() => {
    if (t.sim.down) wasDown = true;
    else if (wasDown && backAt === undefined) backAt = Date.now();
  });
  // The service records nothing while it is down; the poll below notices the moment it is back.
  const timer = setInterval(() => {
    if (t.sim.down) wasDown = true;
    else if (wasDown && backAt === undefined) backAt = Date.now();
  }, 10);
  return {
    backAt: () => {
      unwatch();
      clearInterval(timer);
      return backAt;
    },
  };
}

/** Jobs the state holds in flight (a submission awaiting its answer, or a job being polled): never more than the cap. */
export function watchInFlight(statePath: string): { max: () => number } {
  let max = 0;
  let db: Db | undefined;
  const timer = setInterval(() => {
    try {
      db ??= openSqlite(statePath, { readonly: true, fileMustExist: true });
      const { n } = db
        .prepare("SELECT count(*) AS n FROM items WHERE (state = 'submitting' AND not_before = 0) OR state = 'running'")
        .get() as { n: number };
      max = Math.max(max, n);
    } catch {
      // Not written yet.
    }
  }, 20);
  return {
    max: () => {
      clearInterval(timer);
      db?.close();
      return max;
    },
  };
}
