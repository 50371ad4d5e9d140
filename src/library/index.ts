// genbatch as a library: what `import { validate, estimate, run } from 'genbatch'` gives a program.
// Nothing here prints, exits the process or takes its signals.
export { validate } from './validate.js';
export type { ValidateOptions, ValidateResult } from './validate.js';
export { estimate } from './estimate.js';
export type { EstimateOptions, EstimateResult } from './estimate.js';
export { openRun, run } from './run.js';
export type { Run, RunHandle, RunOptions, RunOutcome, RunStart } from './run.js';
export type { GenbatchEvent, StartEvent } from './events.js';
export type { Credentials } from './environment.js';
export type { ItemEvent, RunEvent, RunStateEvent, RunSummary, ServiceEvent, StopKind } from '../runner/index.js';
export type { ManifestIssue } from '../manifest/index.js';
export type { Rate } from '../scheduler/limits.js';
export { EXIT, ExitError } from '../util/exit-error.js';
export { GenbatchError } from '../util/errors.js';
