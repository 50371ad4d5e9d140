import type { Store } from '../../store/index.js';
import type { RunClock } from '../../scheduler/clock.js';
import type { Control } from '../core/control.js';

/** How often a run looks for decisions recorded by other processes (review, approve): real time, a person's. */
const LOOK_EVERY_MS = 500;

/**
 * Decisions on gates, whichever process recorded them: each new one said
 * (`decision`, with what it sent on or skipped), the count of waiting items
 * said when it changes, and the feed woken at once so an unlocked item is
 * sent within a second. Looks only while items wait, or decisions may come.
 */
export function watchDecisions(store: Store, control: Control, clock: Pick<RunClock, 'now' | 'scaled'>): () => void {
  // Counted from the state's tally: a look costs a few statements however many items wait.
  const waitingNow = () => store.itemReports.counts().waiting;
  let waiting = waitingNow();
  let said = -1;
  let since = store.gates.lastDecidedAt();
  const look = () => {
    // A manifest without gates: nothing to look for (its gates change only with a sync, this run's own).
    if (waiting === 0 && said <= 0 && !store.gates.any()) return;
    decideTimedOut(store, clock);
    const decided = store.gates.decidedSince(since);
    for (const d of decided) {
      since = Math.max(since, d.decided_at);
      // What it gates, as the decision left it: not sent yet, and let go or skipped.
      const dependents = store.gates.dependents(d.item_id);
      control.emit({
        kind: 'decision',
        itemId: d.item_id,
        version: d.version,
        decision: d.decision,
        unlocked: dependents.filter((x) => x.state === 'pending').map((x) => x.id),
        skipped: dependents.filter((x) => x.state === 'skipped').map((x) => x.id),
      });
    }
    const now = waitingNow();
    if (now !== said) {
      said = now;
      if (now > 0 || decided.length > 0) {
        const { credits, gates } = store.gates.decisions();
        control.emit({ kind: 'waiting-for-decision', items: now, credits, gates: gates.length });
      }
    }
    // Fewer wait, or a decision came: some may be ready now.
    if (now < waiting || decided.length > 0) control.wake();
    waiting = now;
  };
  look();
  const timer = setInterval(look, LOOK_EVERY_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    // A last look: a run shorter than a look still says what it leaves waiting.
    look();
  };
}

/**
 * A gate's made version that waited for a person longer than its approval
 * timeout (the manifest's, in the service's time) gets the decision the
 * timeout takes, recorded as the timeout's: a person's decision, even a late
 * one, is never overridden, and clearing it in review is a person's to make.
 */
function decideTimedOut(store: Store, clock: Pick<RunClock, 'now' | 'scaled'>): void {
  const now = clock.now();
  for (const gate of store.gates.withTimeouts()) {
    if (now - gate.madeAt < clock.scaled(gate.timeoutMs)) continue;
    const decision = gate.onTimeout === 'approve' ? 'approved' : 'rejected';
    const note = `no decision within its approval timeout: ${gate.onTimeout === 'approve' ? 'approved' : 'skipped what it gates'}`;
    store.decisions.decideByTimeout(gate.id, gate.version, decision, note, now);
  }
}
