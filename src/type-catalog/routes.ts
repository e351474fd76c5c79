import { z } from 'zod';
import { defineRoute } from '../platform/api/route';
import { TypeCatalogRow, TypeGetQuery, TypeListQuery, TypeNameParams } from './schemas';
import type { TypeCatalogService } from './service';

const tags = ['ontology'] as const;

export const typeCatalogRoutes = (catalog: TypeCatalogService) => [
  defineRoute({
    method: 'get',
    path: '/v1/ontology/types',
    reads: 'standby',
    operationId: 'listTypes',
    summary: 'The workspace’s type catalog (node and edge types)',
    description:
      'Node and edge types seen in the workspace, with live row counts and their most common property keys; ' +
      'recomputed daily, registered on first sight.',
    tags,
    scope: 'ontology:read',
    query: TypeListQuery,
    response: z.array(TypeCatalogRow),
    handler: ({ auth, query }) => catalog.list(auth, query.kind),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/ontology/types/{name}',
    reads: 'standby',
    operationId: 'getType',
    summary: 'One type of the catalog',
    description: 'One live type by name (and `kind`, when a node type and an edge type share the name).',
    tags,
    scope: 'ontology:read',
    params: TypeNameParams,
    query: TypeGetQuery,
    response: TypeCatalogRow,
    errors: { 404: 'No live type of this name' },
    handler: ({ auth, params, query }) => catalog.get(auth, params.name, query.kind),
  }),
];
