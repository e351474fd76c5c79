import { defineRoute } from '../platform/api/route';
import { OntologyConfig, OntologyConfigPatch } from './schemas';
import type { OntologyConfigService } from './service';

const tags = ['ontology-config'];

export const ontologyConfigRoutes = (settings: OntologyConfigService) => [
  defineRoute({
    method: 'get',
    path: '/v1/ontology/config',
    summary: 'The workspace’s search, importance and resolver settings',
    tags,
    scope: 'ontology:read',
    response: OntologyConfig,
    handler: ({ auth }) => settings.get(auth),
  }),
  defineRoute({
    method: 'patch',
    path: '/v1/ontology/config',
    summary: 'Update any subset of the workspace’s settings',
    tags,
    scope: 'ontology:write',
    body: OntologyConfigPatch,
    response: OntologyConfig,
    handler: ({ auth, body }) => settings.patch(auth, body),
  }),
];
