import { randomUUID } from 'node:crypto';
import { readFile, realpath, stat } from 'node:fs/promises';
import { basename, join, sep } from 'node:path';
import { symbolKey } from '../../code/keys';
import type {
  CodeIngestCoverage,
  CodeIngestRequest,
  CodeIngestResponse,
  IngestCommit,
  IngestEdge,
  IngestSymbol,
} from '../../code/schemas';
import { LIMITS } from '../../rules/limits';
import { repositoryProgram } from './checker';
import { commitsOf, IndexError, repositoryRoot, trackedFiles } from './git';
import type { ParsedFile } from './parse';
import { parseFile, SOURCE_EXTENSIONS } from './parse';
import { createProgress } from './progress';
import { edgesOf } from './resolve';

export interface IndexOptions {
  dir: string;
  baseUrl: string;
  apiKey: string;
  workspace?: string;
  repo?: string;
  /** Only files under this path prefix (commits are still read whole). */
  include?: string;
  maxCommits: number;
}

export interface IndexSummary {
  repo: string;
  files: number;
  symbols: number;
  edges: number;
  commits: number;
  skipped: { path: string; reason: string }[];
  batches: number;
  created: number;
  updated: number;
  deleted_symbols: number;
  unresolved_edges: number;
  seconds: number;
}

// A batch's JSON stays well under the API's 1 MiB body limit.
const BATCH_BYTES = 600 * 1024;
const MAX_FILE_BYTES = 1024 * 1024;
const BUSY_RETRIES = 60;

/**
 * What the pass covered, or undefined for the whole repository. A path too long to send cannot be
 * named in the coverage either; it lies under no stored key, so it needs no protection.
 */
function coverageOf(include: string | undefined, skipped: IndexSummary['skipped']): CodeIngestCoverage | undefined {
  const paths = skipped.map((file) => file.path).filter((path) => path.length <= LIMITS.code.pathChars);
  if (include === undefined && paths.length === 0) return undefined;
  // Too many to name, or a prefix no stored path can have: the pass deletes nothing (an empty
  // include covers nothing).
  const unnameable = paths.length > LIMITS.code.coverage.skippedPaths || (include?.length ?? 0) > LIMITS.code.pathChars;
  if (unnameable) return { include: [], skipped: [] };
  return { ...(include === undefined ? {} : { include: [include] }), skipped: paths };
}

const isSource = (path: string) =>
  SOURCE_EXTENSIONS.some((ext) => path.endsWith(ext)) && !path.endsWith('.d.ts') && !path.includes('node_modules/');

/**
 * A tracked file's text, or why it is skipped. The file must resolve inside the repository (a
 * tracked symlink to `~/.aws/credentials` or `/dev/zero` is not read), be a regular file, and be
 * at most MAX_FILE_BYTES by `stat` before a byte is read (review L-6).
 */
async function readSource(realRoot: string, path: string): Promise<{ text: string } | { reason: string }> {
  const real = await realpath(join(realRoot, path)).catch(() => undefined);
  if (real === undefined) return { reason: 'unreadable' };
  if (!real.startsWith(realRoot + sep)) return { reason: 'links out of the repository' };
  const info = await stat(real).catch(() => undefined);
  if (!info) return { reason: 'unreadable' };
  if (!info.isFile()) return { reason: 'not a regular file' };
  if (info.size > MAX_FILE_BYTES) return { reason: 'larger than 1 MiB' };
  const text = await readFile(real, 'utf8').catch(() => undefined);
  return text === undefined ? { reason: 'unreadable' } : { text };
}

/** Splits items into batches by count and by JSON size. */
function chunk<T>(items: readonly T[], maxCount: number): T[][] {
  const batches: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = JSON.stringify(item).length + 1;
    if (current.length > 0 && (current.length >= maxCount || bytes + size > BATCH_BYTES)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/** `weft index <repo-dir>`: parses on this machine, sends batches to POST /v1/code/ingest. */
export async function indexRepository(options: IndexOptions): Promise<IndexSummary> {
  const started = Date.now();
  const root = await repositoryRoot(options.dir);
  const repo = (options.repo ?? basename(root)).replace(/[^A-Za-z0-9._-]/g, '-').slice(0, LIMITS.code.repoChars);
  const progress = createProgress(process.stderr);

  const all = await trackedFiles(root);
  const paths = all.filter((path) => isSource(path) && (!options.include || path.startsWith(options.include)));
  const known = new Set(paths);
  const parsed: ParsedFile[] = [];
  const skipped: IndexSummary['skipped'] = [];
  const realRoot = await realpath(root);
  const texts = new Map<string, string>();
  for (const path of paths) {
    const read = path.length > LIMITS.code.pathChars ? { reason: 'path too long' } : await readSource(realRoot, path);
    if ('reason' in read) skipped.push({ path, reason: read.reason });
    else texts.set(path, read.text);
  }
  // The type checker's program over the texts read (the files' own bytes, never a path re-read).
  const program = repositoryProgram(realRoot, texts);
  progress.phase('parsing', texts.size);
  for (const [path, text] of texts) {
    const file = parseFile(path, text, known, program.sourceOf(path));
    if (file) parsed.push(file);
    else skipped.push({ path, reason: 'does not parse' });
    progress.tick();
  }
  const symbols: IngestSymbol[] = parsed.flatMap((file) => file.symbols);
  const symbolKeys = new Set(symbols.map((symbol) => symbolKey(symbol.kind, symbol.path, symbol.name)));
  const edges: IngestEdge[] = edgesOf(parsed, program).filter((edge) => symbolKeys.has(edge.source));
  const commits: IngestCommit[] = await commitsOf(root, options.maxCommits);

  // Symbols first, so that every edge's ends exist when its batch arrives; commits last.
  const runId = randomUUID();
  const batches: Omit<CodeIngestRequest, 'repo' | 'run_id' | 'final'>[] = [
    ...chunk(symbols, LIMITS.code.batch.symbols).map((part) => ({ symbols: part, edges: [], commits: [] })),
    ...chunk(edges, LIMITS.code.batch.edges).map((part) => ({ symbols: [], edges: part, commits: [] })),
    ...chunk(commits, LIMITS.code.batch.commits).map((part) => ({ symbols: [], edges: [], commits: part })),
  ];
  if (batches.length === 0) batches.push({ symbols: [], edges: [], commits: [] });
  // The server deletes only inside what the pass covered (review M-8). Coverage rides a batch of
  // its own, so the final batch stays under the body limit whatever the skipped paths weigh.
  const coverage = coverageOf(options.include, skipped);
  if (coverage) batches.push({ symbols: [], edges: [], commits: [], coverage });

  const summary: IndexSummary = {
    repo,
    files: parsed.length,
    symbols: symbols.length,
    edges: edges.length,
    commits: commits.length,
    skipped,
    batches: batches.length,
    created: 0,
    updated: 0,
    deleted_symbols: 0,
    unresolved_edges: 0,
    seconds: 0,
  };
  progress.phase('sending', batches.length);
  for (const [index, batch] of batches.entries()) {
    const applied = await send(options, { ...batch, repo, run_id: runId, final: index === batches.length - 1 });
    summary.created += applied.created;
    summary.updated += applied.updated;
    summary.deleted_symbols += applied.deleted_symbols;
    summary.unresolved_edges += applied.unresolved_edges;
    progress.tick();
  }
  progress.done();
  summary.seconds = Math.round((Date.now() - started) / 100) / 10;
  return summary;
}

async function send(options: IndexOptions, batch: CodeIngestRequest): Promise<CodeIngestResponse> {
  const url = new URL('/v1/code/ingest', options.baseUrl);
  if (options.workspace) url.searchParams.set('workspace_id', options.workspace);
  for (let attempt = 0; ; attempt += 1) {
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${options.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(batch),
      });
    } catch (error) {
      throw new IndexError(`cannot reach ${options.baseUrl}: ${(error as Error).message}`);
    }
    const body = await response.text();
    // 409: another batch of this repository is being applied (another indexer); wait for it.
    if (response.status === 409 && attempt < BUSY_RETRIES) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      continue;
    }
    if (!response.ok) throw new IndexError(`POST ${url.pathname} answered ${response.status}: ${body.slice(0, 2000)}`);
    return JSON.parse(body) as CodeIngestResponse;
  }
}
