import { z } from 'zod';
import { NodeResponse } from '../graph/schemas';
import { LIMITS } from '../rules/limits';
import { CreditReceipt } from '../search/schemas';

const C = LIMITS.code;

// ---- POST /v1/ontology/symbol-context ----

export const SymbolContextRequest = z
  .object({
    node_id: z.uuid().optional().describe('The symbol’s node (preferred).'),
    name: z
      .string()
      .min(1)
      .max(LIMITS.nodeNameLength)
      .optional()
      .describe('With `type`: the node name (e.g. `Parser.parse`) or the stable key (`src/parser.ts#Parser.parse`).'),
    type: z.string().min(1).max(LIMITS.typeLength).optional().describe('With `name`: the node type, e.g. code.method.'),
    limit: z
      .number()
      .int()
      .min(1)
      .max(C.contextList.max)
      .default(C.contextList.default)
      .describe(`The cap on each list of the answer (default ${C.contextList.default}, max ${C.contextList.max}).`),
    cursors: z
      .object({
        tests: z.string().max(C.contextCursorChars).nullable().optional(),
        callers: z.string().max(C.contextCursorChars).nullable().optional(),
        callees: z.string().max(C.contextCursorChars).nullable().optional(),
      })
      .strict()
      .optional()
      .describe(
        'The next page of the tests, callers or callees list: the `next_cursors` entry of the previous answer ' +
          '(same symbol and limit); the whole `next_cursors` object may be sent back. A list without a cursor (or ' +
          'null) starts from its first page.',
      ),
  })
  .meta({ id: 'SymbolContextRequest' });
export type SymbolContextRequest = z.output<typeof SymbolContextRequest>;

export const SymbolRef = z
  .object({
    id: z.uuid(),
    type: z.string(),
    name: z.string(),
    key: z.string().nullable().describe('The stable key within its repository.'),
    path: z.string().nullable(),
    line: z.number().int().nullable(),
  })
  .meta({ id: 'SymbolRef' });
export type SymbolRef = z.input<typeof SymbolRef>;

export const SymbolCommit = z
  .object({
    sha: z.string(),
    message: z.string(),
    author: z.string(),
    committed_at: z.string(),
    action: z.enum(['added', 'modified', 'deleted', 'renamed']),
  })
  .meta({ id: 'SymbolCommit' });

export const SymbolContextResponse = z
  .object({
    symbol: NodeResponse,
    containing_class: SymbolRef.nullable().describe('The class (or interface) that CONTAINS a method; null otherwise.'),
    sibling_methods: z.array(SymbolRef).describe('The other methods of the containing class.'),
    tests: z.array(SymbolRef).describe('code.test nodes with a TESTS edge to the symbol (by name, paged).'),
    callers: z.array(SymbolRef).describe('Sources of CALLS edges into the symbol (by name, paged).'),
    callees: z
      .array(SymbolRef)
      .describe('Targets of the symbol’s CALLS edges (a test block’s: its TESTS edges) (by name, paged).'),
    next_cursors: z
      .object({ tests: z.string().nullable(), callers: z.string().nullable(), callees: z.string().nullable() })
      .describe('Each paged list’s cursor to its next page (request `cursors`), null when the list is complete.'),
    semantic: z
      .array(SymbolRef.extend({ similarity: z.number() }))
      .describe(
        'The nearest code nodes by embedding (cosine), the symbol itself excluded; empty until it is embedded.',
      ),
    recent_commits: z
      .array(SymbolCommit)
      .describe('Newest first: commits with a TOUCHED edge to the symbol or to the file that contains it.'),
    credit_receipt: CreditReceipt,
  })
  .meta({ id: 'SymbolContextResponse' });
export type SymbolContextResponse = z.input<typeof SymbolContextResponse>;

// ---- POST /v1/code/ingest ----

export const CODE_SYMBOL_KINDS = ['file', 'class', 'interface', 'method', 'function', 'test'] as const;
export type CodeSymbolKind = (typeof CODE_SYMBOL_KINDS)[number];
export const CODE_EDGE_TYPES = ['CONTAINS', 'CALLS', 'TESTS', 'IMPLEMENTS', 'OVERRIDES'] as const;
export const EDGE_RESOLUTIONS = ['type', 'name', 'union'] as const;
export const TOUCH_ACTIONS = ['added', 'modified', 'deleted', 'renamed'] as const;
export type TouchAction = (typeof TOUCH_ACTIONS)[number];

const path = z.string().min(1).max(C.pathChars);
const key = z
  .string()
  .min(1)
  .max(C.pathChars + C.nameChars + 1);

export const IngestSymbol = z
  .object({
    kind: z.enum(CODE_SYMBOL_KINDS),
    path: path.describe('The file’s path in the repository, forward slashes.'),
    name: z
      .string()
      .min(1)
      .max(C.nameChars)
      .describe(
        'file: its path; class: `Class`; interface: `Interface`; method: `Class.method` (or `Interface.method`); ' +
          'function: `fn`; test: its full title.',
      ),
    line: z.number().int().min(0).optional(),
    end_line: z.number().int().min(0).optional(),
    signature: z.string().max(C.signatureChars).optional(),
    doc: z.string().max(C.docChars).optional().describe('The doc comment (embedded with the name and signature).'),
  })
  .meta({ id: 'CodeIngestSymbol' });
export type IngestSymbol = z.output<typeof IngestSymbol>;

export const IngestEdge = z
  .object({
    type: z.enum(CODE_EDGE_TYPES),
    source: key.describe('The source symbol’s key: `path` for a file, `path#name` for the others.'),
    target: key,
    resolution: z
      .enum(EDGE_RESOLUTIONS)
      .optional()
      .describe(
        'CALLS/TESTS/IMPLEMENTS/OVERRIDES: `type` when the type checker resolved the callee, `name` when only ' +
          'names did (the checker could not type it), `union` for one of the possible targets of a call through ' +
          'an element access over a record of functions (`detectors[name]()`). Stored on the edge’s properties.',
      ),
  })
  .meta({ id: 'CodeIngestEdge' });
export type IngestEdge = z.output<typeof IngestEdge>;

export const IngestCommit = z
  .object({
    sha: z.string().regex(/^[0-9a-f]{7,64}$/, 'a hex commit id'),
    message: z.string().max(C.commitMessageChars),
    author: z.string().max(C.authorChars),
    committed_at: z.iso.datetime({ offset: true }),
    files: z
      .array(z.object({ path, action: z.enum(TOUCH_ACTIONS), previous_path: path.optional() }))
      .max(C.batch.filesPerCommit)
      .describe('What the commit did to each file (git log --name-status: A, M, D, R).'),
  })
  .meta({ id: 'CodeIngestCommit' });
export type IngestCommit = z.output<typeof IngestCommit>;

export const CodeIngestCoverage = z
  .object({
    include: z
      .array(z.string().max(C.pathChars))
      .max(C.coverage.includePrefixes)
      .optional()
      .describe(
        'The path prefixes the pass read (e.g. `src/`). Absent: the whole repository; an empty list: nothing, ' +
          'so the pass deletes no symbol.',
      ),
    skipped: z
      .array(path)
      .max(C.coverage.skippedPaths)
      .default([])
      .describe('Files the pass did not send (unreadable, too large, unparsable): their symbols are kept.'),
  })
  .meta({ id: 'CodeIngestCoverage' });
export type CodeIngestCoverage = z.output<typeof CodeIngestCoverage>;

export const CodeIngestRequest = z
  .object({
    repo: z
      .string()
      .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, dot, underscore and dash')
      .max(C.repoChars)
      .describe('The repository’s name in this workspace; part of the workflow id.'),
    run_id: z.uuid().describe('One indexing pass: every batch of the pass carries the same id.'),
    symbols: z.array(IngestSymbol).max(C.batch.symbols).default([]),
    edges: z.array(IngestEdge).max(C.batch.edges).default([]),
    commits: z.array(IngestCommit).max(C.batch.commits).default([]),
    final: z
      .boolean()
      .default(false)
      .describe(
        'The pass’s last batch: after applying it, the symbols of the repository inside the pass’s `coverage` ' +
          'that no batch of the pass sent are soft-deleted, with the indexer’s edges this pass did not write.',
      ),
    coverage: CodeIngestCoverage.optional().describe(
      'Read with a final batch: what the pass covered. Without it, the whole repository.',
    ),
  })
  .meta({ id: 'CodeIngestRequest' });
export type CodeIngestRequest = z.output<typeof CodeIngestRequest>;

export const CodeIngestResponse = z
  .object({
    workflow_id: z.string().describe('code-index-<workspace>-<repo>; each batch is one run of it.'),
    repo: z.string(),
    run_id: z.uuid(),
    created: z.number().int().describe('New nodes.'),
    updated: z.number().int().describe('Existing nodes updated in place (ids kept), revived ones included.'),
    edges: z.number().int().describe('Edges written or confirmed.'),
    unresolved_edges: z.number().int().describe('Edges whose ends are unknown to the repository (skipped).'),
    embeddings_requested: z.number().int(),
    deleted_symbols: z.number().int().describe('Soft-deleted by a final batch.'),
    deleted_edges: z.number().int().describe('Soft-deleted by a final batch.'),
  })
  .meta({ id: 'CodeIngestResponse' });
export type CodeIngestResponse = z.input<typeof CodeIngestResponse>;
