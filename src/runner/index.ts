export { Runner, type RunSummary } from './runner.js';
export type { RunEvent, StopKind } from './core/control.js';
export type { ItemEvent, RunStateEvent, ServiceEvent } from './core/events.js';
export type { CanarySize } from './feed/canary.js';
export { runIdFor } from './core/identity.js';
export type { RunOptions } from './options.js';
export {
  prepareRun,
  startRun,
  type PreparedRun,
  type RunConnection,
  type RunRequest,
  type StartedRun,
} from './start.js';
