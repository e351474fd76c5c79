import type { ApprovalService } from '../approvals/service';
import type { AnyCapability } from '../capabilities/define';
import { capabilitiesFeature } from '../capabilities/feature';
import type { CodeService } from '../code/service';
import type { NodeService } from '../graph/node-service';
import type { TraversalService } from '../graph/traversal-service';
import type { VersionService } from '../graph/versions-service';
import type { ScopedRead, UnitOfWork } from '../platform/db/unit-of-work';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { PromptApi } from '../prompt/dispatcher';
import type { PromptService } from '../prompt/service';
import type { RunService } from '../runs/service';
import type { WaitpointService } from '../runs/waitpoints';
import type { SearchService } from '../search/service';
import type { Feature } from './feature';
import { FEATURES } from './features';

/** Everything a feature's tools may use; each manifest names the part it needs. */
export interface CapabilityDeps {
  uow: UnitOfWork;
  read: ScopedRead;
  outbox: Pick<OutboxRelay, 'kick'>;
  sessionTtlSeconds: number;
  prompts: PromptService;
  promptApi: PromptApi;
  search: SearchService;
  nodes: NodeService;
  traversals: TraversalService;
  versions: VersionService;
  code: CodeService;
  /** The run service, read when a run tool is called (it reads the registry's tools itself). */
  runs: () => RunService;
  /** The approvals inbox and the waitpoints, read when their answering tools are called (issue 42). */
  approvals: () => ApprovalService;
  waitpoints: () => WaitpointService;
}

/**
 * Every capability, declared once in the features' manifests: the `/v1/cap` routes, the runs' step
 * executor and the MCP tool list all read this list (through the capability service). The order is
 * what clients list: the features' tools in the features' order, the registry's general tools
 * (ontology, billing) last.
 */
export function allCapabilities(deps: CapabilityDeps): AnyCapability[] {
  const general: Feature = capabilitiesFeature;
  const features = [...FEATURES.filter((feature) => feature !== general), general];
  return features.flatMap((feature) => feature.capabilities?.(deps) ?? []);
}
