export {
  startSimulator,
  type OutageMode,
  type RunningSimulator,
  type ScheduledOutage,
} from './server.js';
export { MARKERS } from './submissions.js';
export type { SimulatorOptions, SimKeyOptions } from './options.js';
export type { LedgerEvent } from './ledger.js';
