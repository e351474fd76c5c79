import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { GENAI_CONTENT_ATTRIBUTES, genAiContentCaptured } from './genai';

// Review NL-4: what spans may say (docs/operations.md, "Tracing"). Query strings carry what users
// typed (typeahead text, filters, `as_of`), an outgoing URL's path may carry a tenant's token (a
// callback's URL), and the unit of work's BEGIN message has its scope and the credential's lookup
// written in as literals (a key's hash, a user id and a JWT's jti). None of it leaves in a span.

const withoutQuery = (url: string) => url.split('?')[0]!;

/** A URL's origin (`https://host:port`), or the text up to its path when it does not parse. */
const originOnly = (url: string) =>
  URL.canParse(url) ? new URL(url).origin : withoutQuery(url).replace(/^([a-z]+:\/\/[^/]*).*$/i, '$1');

/**
 * A finished span's attributes as they may leave (both the instrumentations' old and stable names):
 * no query string anywhere; a client span (kind 2) keeps only the origin it called; a statement its
 * parameterised text (tracedStatement); no GenAI content unless opted in. Changes `attributes` in place.
 */
export function redactAttributes(attributes: Record<string, unknown>, client: boolean): void {
  for (const key of ['http.url', 'url.full', 'http.target', 'url.path']) {
    const value = attributes[key];
    if (typeof value !== 'string') continue;
    if (client) attributes[key] = key === 'http.url' || key === 'url.full' ? originOnly(value) : '';
    else attributes[key] = withoutQuery(value);
  }
  if ('url.query' in attributes) delete attributes['url.query'];
  for (const key of ['db.statement', 'db.query.text']) {
    const value = attributes[key];
    if (typeof value === 'string') attributes[key] = tracedStatement(value);
  }
  // Prompts, answers and tool inputs and outputs leave only when the operator opted in (genai.ts).
  if (!genAiContentCaptured()) for (const key of GENAI_CONTENT_ATTRIBUTES) delete attributes[key];
}

/** Every span passes here on its way to the exporter (tracing.ts): `redactAttributes` on each. */
export function redactingSpanProcessor(next: SpanProcessor): SpanProcessor {
  return {
    onStart: (span, context) => next.onStart(span, context),
    onEnd(span: ReadableSpan) {
      redactAttributes(span.attributes as Record<string, unknown>, span.kind === SpanKind.CLIENT);
      next.onEnd(span);
    },
    forceFlush: () => next.forceFlush(),
    shutdown: () => next.shutdown(),
  };
}

/**
 * A statement's text as a span may show it: a message that begins a unit of work has its values
 * written in as literals (src/platform/db/unit-of-work.ts, beginScoped), so each literal becomes `?`
 * but the setting names `set_config` takes first. Any other statement binds its values: unchanged.
 */
export function tracedStatement(text: string): string {
  if (!/^\s*BEGIN\b/i.test(text)) return text;
  return text.replace(/(set_config\(\s*)?'(?:[^']|'')*'/g, (literal, setting: string | undefined) =>
    setting ? literal : '?',
  );
}

/**
 * What of a workflow's own spans may leave: the Temporal SDK's sink copies the whole WorkflowInfo
 * onto each span's attributes, its search attributes (`WeftWorkspaceId`), memo, parent and last
 * result included. Kept: the span's own Temporal attributes and the workflow's id, run id, type,
 * task queue, namespace and attempt.
 */
const WORKFLOW_INFO_KEPT = new Set(['workflowId', 'runId', 'workflowType', 'taskQueue', 'namespace', 'attempt']);

export function workflowSpanProcessor(next: SpanProcessor): SpanProcessor {
  return {
    onStart: () => undefined,
    onEnd(span: ReadableSpan) {
      const attributes = span.attributes as Record<string, unknown>;
      for (const key of Object.keys(attributes)) {
        if (!WORKFLOW_INFO_KEPT.has(key) && !key.startsWith('temporal')) delete attributes[key];
      }
      next.onEnd(span);
    },
    forceFlush: () => next.forceFlush(),
    // The provider shuts the processor itself down.
    shutdown: () => Promise.resolve(),
  };
}
