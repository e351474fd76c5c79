import { defineRoute } from '../platform/api/route';
import {
  ConnectorIdParams,
  ConnectorList,
  ConnectorVersionParams,
  ConnectorVersionView,
  ConnectorView,
  CreateConnectorRequest,
  UpdateConnectorRequest,
} from './schemas';
import type { ConnectorService } from './service';

const tags = ['connectors'] as const;
const scope = 'connectors:manage' as const;
const notFound = { 404: 'No such connector in this workspace' };
const unregistrable =
  'A bad document, a server that cannot be reached or listed (its address refused included), or a tool list ' +
  'that cannot be registered: `{detail: [{loc, msg, type}]}` with the reason; nothing was stored';

export const connectorRoutes = (connectors: ConnectorService) => [
  defineRoute({
    method: 'post',
    path: '/v1/connectors',
    operationId: 'createConnector',
    summary: 'Register a remote MCP server or an OpenAPI-described HTTP API; its tools become `<name>.<tool>`',
    description:
      'Lists the remote tools first (MCP `tools/list` over Streamable HTTP; the document’s operations with an ' +
      'operationId) and registers each as the capability `<name>.<tool>` for this workspace only. Secrets in ' +
      '`auth` are sealed and never answered again: reads show the type, a fingerprint and the last 4 characters. ' +
      'The address is judged at connect time (docs/connectors.md).',
    tags,
    scope,
    body: CreateConnectorRequest,
    example: {
      name: 'tracker',
      kind: 'mcp',
      url: 'https://mcp.example.com/mcp',
      auth: { type: 'bearer', token: 'sk-…' },
    },
    status: 201,
    response: ConnectorView,
    errors: { 409: '`name_reserved` (a built-in area), `name_taken` or `too_many_connectors`', 422: unregistrable },
    handler: ({ auth, body }) => connectors.create(auth, body),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/connectors',
    operationId: 'listConnectors',
    summary: 'List the workspace’s connectors',
    description: 'By name; secrets never appear.',
    tags,
    scope,
    response: ConnectorList,
    handler: ({ auth }) => connectors.list(auth),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/connectors/{id}',
    operationId: 'getConnector',
    summary: 'Get one connector with its tools, their input schemas and read_only',
    description: 'Another workspace’s is 404.',
    tags,
    scope,
    params: ConnectorIdParams,
    response: ConnectorView,
    errors: notFound,
    handler: ({ auth, params }) => connectors.get(auth, params.id),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/connectors/{id}/versions/{version}',
    operationId: 'getConnectorVersion',
    summary: 'Get one kept version of a connector’s tools (a run keeps the versions it started with)',
    description:
      'The current version, and each older one while a run that started with it is unfinished (the hourly ' +
      'maintenance pass prunes the rest). Another workspace’s connector, or a version not kept, is 404.',
    tags,
    scope,
    params: ConnectorVersionParams,
    response: ConnectorVersionView,
    errors: { 404: 'No such connector in this workspace, or `version_not_found`' },
    handler: ({ auth, params }) => connectors.getVersion(auth, params.id, params.version),
  }),
  defineRoute({
    method: 'patch',
    path: '/v1/connectors/{id}',
    operationId: 'updateConnector',
    summary: 'Rotate a connector’s credentials or change its timeout, response cap or price',
    description: 'New credentials are checked by listing the tools again (422 and nothing changed when that fails).',
    tags,
    scope,
    params: ConnectorIdParams,
    body: UpdateConnectorRequest,
    example: { auth: { type: 'bearer', token: 'sk-new…' } },
    response: ConnectorView,
    errors: { ...notFound, 422: unregistrable },
    handler: ({ auth, params, body }) => connectors.update(auth, params.id, body),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/connectors/{id}/refresh',
    operationId: 'refreshConnector',
    summary: 'List the remote tools again; a changed list is a new version',
    description: 'A refresh that cannot list or register the tools is 422 and keeps the tools as they were.',
    tags,
    scope,
    params: ConnectorIdParams,
    response: ConnectorView,
    errors: { ...notFound, 422: unregistrable },
    handler: ({ auth, params }) => connectors.refresh(auth, params.id),
  }),
  defineRoute({
    method: 'delete',
    path: '/v1/connectors/{id}',
    operationId: 'deleteConnector',
    summary: 'Delete a connector; its tools are gone at once',
    description: 'A later call of one of its tools is 404.',
    tags,
    scope,
    params: ConnectorIdParams,
    status: 204,
    errors: notFound,
    handler: async ({ auth, params }) => {
      await connectors.remove(auth, params.id);
      return undefined;
    },
  }),
];
