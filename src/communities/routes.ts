import { defineRoute } from '../platform/api/route';
import { LIMITS } from '../rules/limits';
import {
  CommunityListQuery,
  CommunityListResponse,
  CommunityRefreshRequest,
  CommunityRefreshResponse,
} from './schemas';
import type { CommunityService } from './service';

const tags = ['communities'] as const;

export const communityRoutes = (communities: CommunityService) => [
  defineRoute({
    method: 'post',
    path: '/v1/ontology/communities/refresh',
    tags,
    scope: 'ontology:write',
    operationId: 'refreshCommunities',
    summary: 'Detect the workspace’s communities now',
    description:
      'Runs community detection (Louvain) over the workspace’s live graph as a Temporal workflow and waits for it: ' +
      'communities become `community` nodes with MEMBER_OF edges from their members, each with its size, top ' +
      `members by importance and a summary. 504 after ${LIMITS.communities.refreshWaitMs / 1000} s (the pass goes ` +
      'on). `force: false` applies the schedule’s rule: skip unless the graph changed enough, and is free. ' +
      '`force: true` recomputes whatever changed, is charged (refunded when the pass fails; a 504’s pass goes ' +
      `on and stays charged) and may be asked for once every ${LIMITS.communities.forcedCooldownSeconds} s per ` +
      'workspace: 429 with `Retry-After` within that, nothing charged.',
    credits: ['ontology.communities.refresh_forced'],
    body: CommunityRefreshRequest,
    example: { force: true },
    response: CommunityRefreshResponse,
    errors: {
      429: 'A forced refresh within the workspace’s cooldown (`Retry-After` says when)',
      504: 'The pass is still running; it goes on',
    },
    handler: ({ auth, body }) => communities.refresh(auth, body),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/ontology/communities',
    reads: 'standby',
    tags,
    scope: 'ontology:read',
    operationId: 'listCommunities',
    summary: 'The workspace’s communities',
    description: `The stored communities, most important first; \`limit\` at most ${LIMITS.communities.listMax}.`,
    query: CommunityListQuery,
    response: CommunityListResponse,
    handler: ({ auth, query }) => communities.list(auth, query.limit),
  }),
];
