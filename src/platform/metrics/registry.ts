import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * The process's one metrics registry: Prometheus scrapes a process, so the API's and the worker's
 * pools (WEFT_PROCESS=all runs both) report side by side, labelled by pool. Node's own figures
 * (event loop lag, heap, GC) are registered once, with the standard names.
 *
 * Labels are bounded vocabularies only (a route template, a method, a status, a pool role, a gRPC
 * method): never a workspace id or name, nor anything a client chooses.
 */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

/** The registry's exposition text, with `extra` (another exporter's text, say the Temporal SDK's) after it. */
export async function exposition(extra = ''): Promise<string> {
  const own = await metricsRegistry.metrics();
  return extra ? `${own}\n${extra.trimEnd()}\n` : own;
}

export const METRICS_CONTENT_TYPE = metricsRegistry.contentType;
