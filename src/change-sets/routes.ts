import { defineRoute } from '../platform/api/route';
import { LIMITS } from '../rules/limits';
import { ChangeSetDetail, ChangeSetIdParams, ChangeSetList, ChangeSetListQuery } from './schemas';
import type { ChangeSetService } from './service';

const tags = ['change-sets'] as const;

export const changeSetRoutes = (changeSets: ChangeSetService) => [
  defineRoute({
    method: 'get',
    path: '/v1/ontology/change-sets',
    operationId: 'listChangeSets',
    summary: 'Staged change-sets of the workspace, newest first',
    description:
      'What update prompts and agents’ writes proposed instead of writing, while the workspace’s `staging` ' +
      'settings (or a prompt’s `stage: true`) ask for review: each with its operations, source, stager and ' +
      'outcome. Filter by `status`; ' +
      `\`limit\` up to ${LIMITS.changeSets.list.max} (default ${LIMITS.changeSets.list.default}).`,
    tags,
    scope: 'ontology:read',
    query: ChangeSetListQuery,
    response: ChangeSetList,
    handler: ({ auth, query }) => changeSets.list(auth, query),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/ontology/change-sets/{change_set_id}',
    operationId: 'getChangeSet',
    summary: 'One change-set, with its diff against the graph now',
    description:
      'The change-set and, while it is pending, `preview`: the nodes it would create or reference, the edges it ' +
      'would create, each property change with its value at staging (`before`), now and after, and the ' +
      'conflicts an apply now would report. Approve or reject it with `POST /v1/approvals/{approval_id}/resolve`.',
    tags,
    scope: 'ontology:read',
    params: ChangeSetIdParams,
    response: ChangeSetDetail,
    errors: { 404: 'Unknown change-set, or one of another workspace' },
    handler: ({ auth, params }) => changeSets.get(auth, params.change_set_id),
  }),
];
