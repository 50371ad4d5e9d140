export { ApiClient } from './client.js';
export { createDispatcher } from './http.js';
export type { ApiAnswer, ClientOptions, Download, LimitKind } from './client.js';
export { ApiError, ResponseShapeError, StorageError, TransportError, parseRetryAfter } from './errors.js';
export {
  ERROR_TABLE,
  JOB_END_TABLE,
  backoffMs,
  isTerminalStatus,
  policy,
  waitMs,
  reactionTo,
  type Operation,
  type Reaction,
} from './policy.js';
export type * from './types.js';
