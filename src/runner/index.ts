export { Runner, type RunSummary } from './runner.js';
export type { RunEvent, RunOptions, StopKind } from './context.js';
