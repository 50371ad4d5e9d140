export { ApiClient, createDispatcher, type ClientOptions, type Download } from './client.js';
export { ApiError, ResponseShapeError, StorageError, TransportError, parseRetryAfter } from './errors.js';
export { ERROR_TABLE, JOB_END_TABLE, isTerminalStatus, reactionTo, type Reaction } from './policy.js';
export type * from './types.js';
