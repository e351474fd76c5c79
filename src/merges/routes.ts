import { z } from 'zod';
import { defineRoute } from '../platform/api/route';
import { MergeCandidate, MergeDecisionBody, MergeDecisionResponse, MergeIdParams, MergeListQuery } from './schemas';
import type { MergeService } from './service';

const tags = ['merges'];

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
    summary: 'Pending person-merge candidates, newest first',
    tags,
    scope: 'ontology:read',
    query: MergeListQuery,
    response: z.array(MergeCandidate),
    handler: ({ auth, query }) => merges.list(auth, query),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/ontology/merges/{id}/approve',
    summary: 'Merge the duplicate into the survivor',
    tags,
    scope: 'ontology:write',
    params: MergeIdParams,
    body: MergeDecisionBody,
    response: MergeDecisionResponse,
    errors: decisionErrors,
    handler: ({ auth, params, body }) => merges.approve(auth, params.id, body),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/ontology/merges/{id}/reject',
    summary: 'Reject the candidate; the pair is never proposed again',
    tags,
    scope: 'ontology:write',
    params: MergeIdParams,
    body: MergeDecisionBody,
    response: MergeDecisionResponse,
    errors: decisionErrors,
    handler: ({ auth, params, body }) => merges.reject(auth, params.id, body),
  }),
];
