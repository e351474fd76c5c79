import { defineRoute } from '../platform/api/route';
import { OntologyConfig, OntologyConfigPatch } from './schemas';
import type { OntologyConfigService } from './service';

const tags = ['ontology-config'] as const;

export const ontologyConfigRoutes = (settings: OntologyConfigService) => [
  defineRoute({
    method: 'get',
    path: '/v1/ontology/config',
    operationId: 'getOntologyConfig',
    summary: 'The workspace’s search, importance, resolver and staging settings',
    description: 'The stored settings merged over the defaults, so every field is present.',
    tags,
    scope: 'ontology:read',
    response: OntologyConfig,
    handler: ({ auth }) => settings.get(auth),
  }),
  defineRoute({
    method: 'patch',
    path: '/v1/ontology/config',
    operationId: 'updateOntologyConfig',
    summary: 'Update any subset of the workspace’s settings',
    description:
      'Merges the given fields into the stored settings and answers with the whole configuration; 422 when ' +
      'the result would be incoherent (min_importance above max_importance).',
    tags,
    scope: 'ontology:write',
    body: OntologyConfigPatch,
    example: { search: { retrieval_mode: 'hybrid', default_top_k: 10 }, resolver: { auto_merge_enabled: false } },
    response: OntologyConfig,
    handler: ({ auth, body }) => settings.patch(auth, body),
  }),
];
