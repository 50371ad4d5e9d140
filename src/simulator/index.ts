export {
  startSimulator,
  type OutageMode,
  type RunningSimulator,
  type ScheduledOutage,
} from './server.js';
export type { SimulatorOptions } from './options.js';
export type { LedgerEvent } from './ledger.js';
