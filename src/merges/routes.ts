import { z } from 'zod';
import { defineRoute } from '../platform/api/route';
import { LIMITS } from '../rules/limits';
import { MergeCandidate, MergeDecisionBody, MergeDecisionResponse, MergeIdParams, MergeListQuery } from './schemas';
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
];
