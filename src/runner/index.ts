export { Runner, type RunSummary } from './runner.js';
export type { RunEvent, StopKind } from './control.js';
export type { RunOptions } from './options.js';
export {
  prepareRun,
  startRun,
  type PreparedRun,
  type RunConnection,
  type RunRequest,
  type StartedRun,
} from './start.js';
