import { a2aFeature } from '../a2a/feature';
import { agUiFeature } from '../ag-ui/feature';
import { agentsFeature } from '../agents/feature';
import { apiKeysFeature } from '../api-keys/feature';
import { approvalsFeature } from '../approvals/feature';
import { capabilitiesFeature } from '../capabilities/feature';
import { changeSetsFeature } from '../change-sets/feature';
import { codeFeature } from '../code/feature';
import { communitiesFeature } from '../communities/feature';
import { connectorsFeature } from '../connectors/feature';
import { consoleFeature } from '../console/feature';
import { creditsFeature } from '../credits/feature';
import { embeddingsFeature } from '../embeddings/feature';
import { graphFeature } from '../graph/feature';
import { healthFeature } from '../health/feature';
import { importanceFeature } from '../importance/feature';
import { mcpFeature } from '../mcp/feature';
import { mcpTokensFeature } from '../mcp-tokens/feature';
import { mergesFeature } from '../merges/feature';
import { metricsFeature } from '../metrics/feature';
import { oauthFeature } from '../oauth/feature';
import { ontologyConfigFeature } from '../ontology-config/feature';
import { authFeature } from '../platform/auth/feature';
import type { TagDescriptions } from '../platform/openapi/tags';
import { outboxFeature } from '../platform/outbox/feature';
import { temporalCodecFeature } from '../platform/temporal/codec-server/feature';
import { promptFeature } from '../prompt/feature';
import { runCallbacksFeature } from '../run-callbacks/feature';
import { runSchedulesFeature } from '../run-schedules/feature';
import { runsFeature } from '../runs/feature';
import { searchFeature } from '../search/feature';
import { tenancyFeature } from '../tenancy/feature';
import { triggersFeature } from '../triggers/feature';
import { typeCatalogFeature } from '../type-catalog/feature';
import type { Feature } from './feature';
import type { ServicesOf } from './services';

/**
 * The one list of features: the services, routes, OpenAPI tags, entities, outbox handlers,
 * schedules and capabilities are all read from it. A new feature joins here (and adds its
 * workflows and activities to workflows/index.ts and activities/index.ts, which the bundle needs
 * as static exports); runtime.ts builds only the kernel the services share.
 *
 * The order is the routes' order (the router and the OpenAPI document), then the features
 * without routes; an event's handlers run in this order too.
 *
 * A tuple without annotation, so that `FeatureServices` can be read from its members' own types;
 * `FEATURES` below checks each against `Feature` (annotating this one would make `Feature`, which
 * names `Runtime`, depend on itself).
 */
const MANIFESTS = [
  healthFeature,
  // No routes; its middleware answers GET /metrics ahead of every other feature's.
  metricsFeature,
  apiKeysFeature,
  mcpTokensFeature,
  // Ahead of mcp: its middleware adds the OAuth challenge to /mcp's 401s.
  oauthFeature,
  ontologyConfigFeature,
  graphFeature,
  typeCatalogFeature,
  promptFeature,
  mergesFeature,
  changeSetsFeature,
  searchFeature,
  communitiesFeature,
  codeFeature,
  temporalCodecFeature,
  agentsFeature,
  capabilitiesFeature,
  // After capabilities: `POST /v1/cap/{name}` reaches its tools; its own routes are /v1/connectors.
  connectorsFeature,
  runsFeature,
  // After runs: AG-UI's door to the runs (POST /v1/ag-ui).
  agUiFeature,
  // After runs: its routes (/v1/approvals*) followed the runs' when runs held them.
  approvalsFeature,
  runCallbacksFeature,
  runSchedulesFeature,
  mcpFeature,
  // After mcp: the A2A door to the same runs (issue 42 item 2).
  a2aFeature,
  creditsFeature,
  consoleFeature,
  triggersFeature,
  tenancyFeature,
  embeddingsFeature,
  importanceFeature,
  authFeature,
  outboxFeature,
] as const;

/** Every feature, as the app's lists read them. */
export const FEATURES: readonly Feature[] = MANIFESTS;

/** Every service the manifests declare, by name and type: `Runtime['services']`. */
export type FeatureServices = ServicesOf<typeof MANIFESTS>;

/** Every feature's OpenAPI tags and their descriptions; a tag is described by one feature only. */
export const API_TAGS: TagDescriptions = describeTags(FEATURES);

function describeTags(features: readonly Feature[]): TagDescriptions {
  const tags: Record<string, string> = {};
  for (const feature of features) {
    for (const [name, description] of Object.entries(feature.tags ?? {})) {
      if (Object.hasOwn(tags, name)) throw new Error(`two features describe the tag '${name}'`);
      tags[name] = description;
    }
  }
  return tags;
}
