export { blockers, estimate, type Estimate, type EstimateInput, type ModelCost } from './estimate.js';
export { estimateDuration, formatDuration, TYPICAL_SECONDS } from './duration.js';
export { catalogVideoPrice, priceOf } from './prices.js';
export { estimateEta, type Eta, type EtaInput } from './eta.js';
