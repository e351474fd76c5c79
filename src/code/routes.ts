import { defineRoute } from '../platform/api/route';
import { LIMITS } from '../rules/limits';
import { CodeIngestRequest, CodeIngestResponse, SymbolContextRequest, SymbolContextResponse } from './schemas';
import type { CodeService } from './service';

const C = LIMITS.code;

export const codeRoutes = (code: CodeService) => [
  defineRoute({
    method: 'post',
    path: '/v1/ontology/symbol-context',
    tags: ['ontology'],
    scope: 'ontology:read',
    operationId: 'symbolContext',
    summary: 'What surrounds a code symbol: class, siblings, tests, callers, callees, similar code, commits',
    description:
      'Resolves the symbol by `node_id` (preferred) or by the pair `name` and `type` (the name, or the stable key ' +
      'such as `src/parser.ts#Parser.parse`), then answers with its containing class, the class’s other methods, ' +
      'its tests (TESTS edges), callers and callees (CALLS edges), its nearest code nodes by embedding (itself ' +
      'excluded) and the commits that touched it or its file, newest first (TOUCHED edges). Each list holds at ' +
      `most \`limit\` entries (default ${C.contextList.default}, max ${C.contextList.max}). The charge comes first; ` +
      'a 400, 404 or 409 refunds it.',
    credits: ['ontology.symbol_context'],
    body: SymbolContextRequest,
    example: { name: 'Parser.parse', type: 'code.method', limit: 20 },
    response: SymbolContextResponse,
    errors: {
      400: 'Neither node_id nor both name and type were given',
      404: 'No live node with this id, or no node of this (name, type), in the workspace',
      409: 'Several nodes match (name, type); `detail.candidate_ids` lists them',
    },
    handler: ({ auth, body }) => code.symbolContext(auth, body),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/code/ingest',
    tags: ['code'],
    scope: 'ontology:write',
    operationId: 'ingestCode',
    summary: 'Apply one batch of a repository’s code graph (files, symbols, edges, commits)',
    description:
      'The bulk endpoint behind `weft index` and any other indexer. A batch holds at most ' +
      `${C.batch.symbols} symbols, ${C.batch.edges} edges and ${C.batch.commits} commits (each with at most ` +
      `${C.batch.filesPerCommit} files); names at most ${C.nameChars} characters, paths ${C.pathChars}, signatures ` +
      `${C.signatureChars}, doc comments ${C.docChars}. Symbols become code.file, code.class, code.method, ` +
      'code.function and code.test nodes keyed by path (file), `path#Class`, `path#Class.method`, `path#fn` and ' +
      '`path#<test title>`; commits become code.commit nodes keyed by sha, with TOUCHED edges (and the action) to ' +
      'the files they changed. Edges name their ends by key, and may point at symbols of earlier batches of the ' +
      'repository; an end that is unknown or deleted is skipped and counted. A re-index updates nodes in place ' +
      '(ids, claims and findings stay); the pass’s `final` batch soft-deletes the symbols of the repository ' +
      'inside the pass’s `coverage` (its include prefixes, minus the files it skipped; the whole repository ' +
      'without one) that no batch of the pass sent, with the indexer’s own edges the pass did not write. Edges ' +
      'the indexer did not write (findings, users’ edges) are never deleted by it, so a revived symbol keeps ' +
      'them. The batch is applied by the Temporal workflow ' +
      '`code-index-<workspace>-<repo>` (one run per batch); the answer comes when it is applied. 409 while ' +
      'another batch of the same repository is being applied. New or changed nodes are embedded asynchronously ' +
      '(name, signature and doc comment), charged `worker.embed_node` each like any node.',
    body: CodeIngestRequest,
    example: {
      repo: 'weft',
      run_id: '5f0c7c1e-8d1a-4a57-9a8e-0b9f5c1d2e3f',
      symbols: [
        { kind: 'file', path: 'src/parser.ts', name: 'src/parser.ts' },
        { kind: 'class', path: 'src/parser.ts', name: 'Parser', line: 3 },
        {
          kind: 'method',
          path: 'src/parser.ts',
          name: 'Parser.parse',
          line: 5,
          signature: 'parse(text: string): Ast',
          doc: 'Parses one module.',
        },
      ],
      edges: [
        { type: 'CONTAINS', source: 'src/parser.ts', target: 'src/parser.ts#Parser' },
        { type: 'CONTAINS', source: 'src/parser.ts#Parser', target: 'src/parser.ts#Parser.parse' },
      ],
      commits: [
        {
          sha: '3f1c2a9b8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a',
          message: 'Parser: one pass',
          author: 'Ada Lovelace <ada@example.org>',
          committed_at: '2026-11-20T10:00:00Z',
          files: [{ path: 'src/parser.ts', action: 'modified' }],
        },
      ],
      final: true,
    },
    response: CodeIngestResponse,
    errors: { 409: 'Another batch of this repository is being applied; send this one when it is done' },
    handler: ({ auth, body }) => code.ingest(auth, body),
  }),
];
