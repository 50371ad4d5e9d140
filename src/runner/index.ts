export { Runner, type RunSummary } from './runner.js';
export type { RunEvent, StopKind } from './core/control.js';
export type { ItemEvent, RunStateEvent, ServiceEvent } from './core/events.js';
export { runIdFor } from './core/identity.js';
export { selects } from './feed/selection.js';
export { openedOf, prepareRun, type PreparedRun } from './start.js';
