/** What one reason to stop does to the run, and how the run ends for it. */
interface StopRule {
  /** `cancel`: queued submissions and uploads are cancelled, never sent; `reserved-go`: those already reserved go. */
  readonly newWork: 'cancel' | 'reserved-go';
  /** `abort`: polls and downloads stop waiting (paid jobs wait in the state for the next run); `finish`: jobs in flight are still polled, recorded and downloaded. */
  readonly waits: 'abort' | 'finish';
  /** The exit code while work is left; `usage` and `environment` and `interrupted` whatever is left. */
  readonly ends: 'stopped' | 'usage' | 'environment' | 'interrupted';
}

/**
 * Every reason a run stops early, and what each does: the one vocabulary, from
 * the stage that asks (Control.askStop) to the outcome's exit code (exitCodeOf).
 */
export const STOPS = {
  /** Ctrl-C, SIGTERM, the library's stop(): whatever stopped the run before, this is its end. */
  interrupted: { newWork: 'cancel', waits: 'abort', ends: 'interrupted' },
  /** --max-credits or the balance: what was reserved within it still goes. */
  budget: { newWork: 'reserved-go', waits: 'finish', ends: 'stopped' },
  moderation: { newWork: 'cancel', waits: 'finish', ends: 'stopped' },
  /** Every key refused (or the account): nothing it asks would be answered. */
  refused: { newWork: 'cancel', waits: 'abort', ends: 'stopped' },
  canary: { newWork: 'cancel', waits: 'finish', ends: 'stopped' },
  drained: { newWork: 'cancel', waits: 'finish', ends: 'stopped' },
  /** The output dir takes no files: jobs in flight are still polled and recorded. */
  disk: { newWork: 'cancel', waits: 'finish', ends: 'environment' },
  /** Nothing answers a poll when the service is unreachable. */
  unreachable: { newWork: 'cancel', waits: 'abort', ends: 'environment' },
  publishing: { newWork: 'cancel', waits: 'finish', ends: 'environment' },
  'taken-over': { newWork: 'cancel', waits: 'finish', ends: 'environment' },
  'nothing-selected': { newWork: 'cancel', waits: 'finish', ends: 'usage' },
} as const satisfies Record<string, StopRule>;

export type StopKind = keyof typeof STOPS;

/** Why a run stopped early, in one vocabulary from the stage that says it to the outcome's exit code. */
export interface Stop {
  readonly kind: StopKind;
  readonly message: string;
}

/**
 * The run's decision on a stage's reason: the first reason stands, but an
 * interrupt is the run's end whatever came before it (it aborts what a budget
 * or a drain still waited for). Returns the reason the run now stops for, or
 * undefined when the one it had stands.
 */
export function decideStop(current: Stop | undefined, asked: Stop): Stop | undefined {
  if (!current) return asked;
  return asked.kind === 'interrupted' && current.kind !== 'interrupted' ? asked : undefined;
}
