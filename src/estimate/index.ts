export { blockers, estimate, type Estimate } from './estimate.js';
export { estimateDuration, formatDuration } from './duration.js';
export { catalogVideoPrice, priceOf } from './prices.js';
export { estimateEta, type EtaInput } from './eta.js';
