export { ApiClient } from './client.js';
export type { ApiAnswer, Download, LimitKind } from './client.js';
export { ApiError, ResponseShapeError, StorageError, TransportError, parseRetryAfter } from './errors.js';
export {
  isTerminalStatus,
  policy,
  waitMs,
  reactionTo,
  type Reaction,
} from './policy.js';
export type * from './types.js';
