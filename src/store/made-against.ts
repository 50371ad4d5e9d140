import type { Store } from './index.js';

/** The service a state was made against: a simulator or not, and where it answered (never a key). */
export interface MadeAgainst {
  /** It said it is a simulator (its /me), or it was a rehearsal's in-process one. */
  simulator: boolean;
  /** Its base URL without credentials or query, or `in-process` for a rehearsal (--simulate). */
  service: string;
  /** Recorded by a run, or inferred for a state an older genbatch made. */
  how: 'recorded' | 'inferred';
}

const META = 'made_against';

/** The rehearsal's in-process simulator, as a state names it. */
export const IN_PROCESS = 'in-process';

/** A base URL as a state may keep it and a message may show it: no user, password, query or fragment. */
export function serviceName(baseUrl: string | undefined): string {
  if (!baseUrl) return 'the service';
  try {
    const url = new URL(baseUrl);
    url.username = '';
    url.password = '';
    url.search = '';
    url.hash = '';
    return url.toString().replace(/\/$/, '');
  } catch {
    return 'the service';
  }
}

/**
 * What a state was made against. One made before this was recorded is
 * inferred: a rehearsal's, or any of whose runs was paced faster than real
 * time (only a simulator's time is scaled), was a simulator's; else unknown.
 */
export function madeAgainst(store: Store): MadeAgainst | undefined {
  const text = store.meta(META);
  if (text !== undefined) {
    const { simulator, service } = JSON.parse(text) as Omit<MadeAgainst, 'how'>;
    return { simulator, service, how: 'recorded' };
  }
  if (store.meta('rehearsal') === '1') return { simulator: true, service: IN_PROCESS, how: 'inferred' };
  const scaled = store.runs.all().find((run) => run.time_scale !== 1);
  if (scaled) return { simulator: true, service: `paced at x${scaled.time_scale}`, how: 'inferred' };
  return undefined;
}

/** Recorded once, by the run that makes the state (or the first to run on an older one). */
export function recordMadeAgainst(store: Store, made: Omit<MadeAgainst, 'how'>): void {
  if (store.meta(META) !== undefined) return;
  store.setMeta(META, JSON.stringify({ simulator: made.simulator, service: made.service }));
}

/** How a message names it: "a simulator (URL)", "the service at URL". */
export function describeService(made: Omit<MadeAgainst, 'how'>): string {
  if (made.service === IN_PROCESS) return "the rehearsal's in-process simulator (--simulate)";
  if (made.simulator) return `a simulator (${made.service})`;
  return made.service === 'the service' ? 'the service' : `the service at ${made.service}`;
}
