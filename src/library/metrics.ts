/** The state's figures served for Prometheus: the library's, as `genbatch metrics` serves them. */
export { startMetricsServer, type MetricsServer } from '../metrics/server.js';
