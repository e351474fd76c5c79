import { z } from 'zod';
import { defineRoute } from '../platform/api/route';
import { LIMITS } from '../rules/limits';
import {
  MergeCandidate,
  MergeDecisionBody,
  MergeDecisionResponse,
  MergeHistory,
  MergeIdParams,
  MergeListQuery,
  UnmergeResponse,
} from './schemas';
import type { MergeService } from './service';

const tags = ['merges'] as const;

const decisionErrors = {
  404: 'Unknown merge candidate, or one of another workspace',
  409: 'Already resolved (applied, rejected or superseded), or a decision is in progress',
  503: 'The decision could not be applied just now; retry after Retry-After seconds',
  504: 'No worker applied the decision in time; it may still apply, so read the queue before retrying',
};

export const mergeRoutes = (merges: MergeService) => [
  defineRoute({
    method: 'get',
    path: '/v1/ontology/merges',
    operationId: 'listMerges',
    summary: 'Pending person-merge candidates, newest first',
    description:
      'Pending candidates proposed by the person resolver, with match reasons and confidence. ' +
      '`status` lists another status instead, latest resolution first (`applied`: merges that can be undone). ' +
      `\`limit\` up to ${LIMITS.merges.list.max} (default ${LIMITS.merges.list.default}).`,
    tags,
    scope: 'ontology:read',
    query: MergeListQuery,
    response: z.array(MergeCandidate),
    handler: ({ auth, query }) => merges.list(auth, query),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/ontology/merges/{id}/approve',
    operationId: 'approveMerge',
    summary: 'Merge the duplicate into the survivor',
    description:
      'Merges the duplicate person into the survivor and records the action with the caller as performer. ' +
      `The body is optional; \`notes\` at most ${LIMITS.merges.notesChars} characters.`,
    tags,
    scope: 'ontology:write',
    params: MergeIdParams,
    body: MergeDecisionBody,
    example: { notes: 'Same email, same person.' },
    response: MergeDecisionResponse,
    errors: decisionErrors,
    handler: ({ auth, params, body }) => merges.approve(auth, params.id, body),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/ontology/merges/{id}/reject',
    operationId: 'rejectMerge',
    summary: 'Reject the candidate; the pair is never proposed again',
    description:
      'Records the rejection; nothing is merged and the resolver never proposes the pair again. ' +
      `The body is optional; \`notes\` at most ${LIMITS.merges.notesChars} characters.`,
    tags,
    scope: 'ontology:write',
    params: MergeIdParams,
    body: MergeDecisionBody,
    example: { notes: 'Different people: father and son.' },
    response: MergeDecisionResponse,
    errors: decisionErrors,
    handler: ({ auth, params, body }) => merges.reject(auth, params.id, body),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/ontology/merges/{id}',
    operationId: 'getMerge',
    summary: 'One merge candidate and its history',
    description:
      'The candidate, whatever its status, with every action taken on it: merged or rejected, then unmerged.',
    tags,
    scope: 'ontology:read',
    params: MergeIdParams,
    response: MergeHistory,
    errors: { 404: 'Unknown merge candidate, or one of another workspace' },
    handler: ({ auth, params }) => merges.get(auth, params.id),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/ontology/merges/{id}/unmerge',
    operationId: 'unmergeMerge',
    summary: 'Undo an applied merge',
    description:
      'Restores the merged-away node as it was, moves the edges the merge re-pointed back to it, revives the ' +
      "edges it removed, and takes the merge's contribution out of the survivor's properties (edits made since " +
      'stand). Edges created on the survivor after the merge stay there and are listed for the reviewer. The ' +
      'candidate becomes `unmerged`, its history gains an `unmerged` action, and the resolver proposes the pair ' +
      `again only once its evidence changes. The body is optional; \`notes\` at most ${LIMITS.merges.notesChars} ` +
      'characters.',
    tags,
    scope: 'ontology:write',
    params: MergeIdParams,
    body: MergeDecisionBody,
    example: { notes: 'Two people after all: father and son.' },
    response: UnmergeResponse,
    errors: {
      404: 'Unknown merge candidate, or one of another workspace',
      409:
        'Not an applied merge (pending, rejected, superseded), already undone, or it cannot be undone (the ' +
        'survivor or the merged-away node was deleted or changed since); `detail` says why',
    },
    handler: ({ auth, params, body }) => merges.unmerge(auth, params.id, body),
  }),
];
