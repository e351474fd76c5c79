import { z } from 'zod';
import { defineRoute } from '../platform/api/route';
import { TypeCatalogRow, TypeGetQuery, TypeListQuery, TypeNameParams } from './schemas';
import type { TypeCatalogService } from './service';

const tags = ['ontology'];

export const typeCatalogRoutes = (catalog: TypeCatalogService) => [
  defineRoute({
    method: 'get',
    path: '/v1/ontology/types',
    summary: 'The workspace’s type catalog (node and edge types)',
    tags,
    scope: 'ontology:read',
    query: TypeListQuery,
    response: z.array(TypeCatalogRow),
    handler: ({ auth, query }) => catalog.list(auth, query.kind),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/ontology/types/{name}',
    summary: 'One type of the catalog',
    tags,
    scope: 'ontology:read',
    params: TypeNameParams,
    query: TypeGetQuery,
    response: TypeCatalogRow,
    errors: { 404: 'No live type of this name' },
    handler: ({ auth, params, query }) => catalog.get(auth, params.name, query.kind),
  }),
];
