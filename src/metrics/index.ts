/** Observability: the Prometheus registry with the queue's and the webhook sender's hooks, and GET /metrics. */
export { createMetrics, JOB_STATES, type GatewayMetrics, type InstanceSample, type MetricsSources } from './registry.js';
export { instanceSamples, metricsRouter, metricsSources, requireMetricsToken, type MetricsRouterDeps } from './router.js';
