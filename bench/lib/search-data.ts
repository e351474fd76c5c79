/**
 * The search benchmark's data and its SQL anchor (bench/search.ts): two workspaces of clustered
 * 512-dim vectors loaded once into weft_bench through the owner connection, a TOASTed copy of the
 * big one for the storage comparison, and the statements a search request runs, through `pg`.
 */
import { randomUUID } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import { confirmReservations, reserveCredits } from '../../src/credits/repository';
import type { SearchSettings } from '../../src/ontology-config/schemas';
import { readOntologyConfig } from '../../src/ontology-config/service';
import type { UnitOfWork } from '../../src/platform/db/unit-of-work';
import { localEmbedding } from '../../src/platform/llm/embedding/local';
import { listsFor, weightsFor } from '../../src/search/ranking';
import { keywordCandidates, vectorScanSettings } from '../../src/search/repository';
import type { SearchMode } from '../../src/search/schemas';
import { CONFIRM_WITHOUT_FLUSH, vectorAndStructural } from '../../src/search/service';
import type { bootBenchService } from './servers';

export const TYPES = 10;
export const CLUSTERS = 200;
// Uniform noise of ±0.04 per dimension around a unit centre: members sit at cosine ≈ 0.89 of it.
const NOISE = 0.08;
const BIG = 'weft-bench-search-big';
const SMALL = 'weft-bench-search-small';

export const topicOf = (c: number) => `topic${c} area${c % 17} field${c % 23}`;

export interface BenchWorkspace {
  workspace_id: string;
  tenant_id: string;
  api_key: string;
}

/**
 * Plain pg behind the calls the repositories make (`queryRows` → `queryRunner.query(sql, params,
 * true)`, and `query`), so "the same SQL" runs without TypeORM.
 */
export const asManager = (client: PoolClient) =>
  ({
    query: async (sql: string, params?: unknown[]) => (await client.query(sql, params)).rows,
    queryRunner: {
      // What `commitWith` sends the last statement and COMMIT through.
      connect: async () => client,
      query: async (sql: string, params?: unknown[]) => {
        const result = await client.query(sql, params);
        return { records: result.rows, affected: result.rowCount ?? undefined };
      },
    },
  }) as unknown as EntityManager;

type Service = Awaited<ReturnType<typeof bootBenchService>>;

/**
 * The big workspace (`totalNodes`) and the small one (1% as many), created and filled on the first
 * run and reused after; the HNSW index is rebuilt after a load (much faster than 100k incremental
 * inserts), and the table vacuumed so the structural lists get index-only scans. `ageDays`: how
 * long ago the most recent node was touched (the data was loaded).
 */
export async function loadSearchWorkspaces(service: Service, totalNodes: number) {
  const { owner, provisioning } = service;
  const ensureTenant = async (name: string) => {
    const [found] = (await owner.query(`SELECT w.id FROM workspaces w WHERE w.name = $1 LIMIT 1`, [name])) as {
      id: string;
    }[];
    const boot = await provisioning.bootstrap(found ? { workspaceId: found.id, name } : { credits: 0, name });
    await owner.query(`UPDATE tenants SET credit_balance = 1000000000, locked = false WHERE id = $1`, [boot.tenant_id]);
    return boot;
  };
  const big = await ensureTenant(BIG);
  const small = await ensureTenant(SMALL);
  const centres = Array.from({ length: CLUSTERS }, (_, c) => `{${localEmbedding(topicOf(c)).join(',')}}`);
  const load = async (workspaceId: string, count: number) => {
    const [{ have }] = await owner.query(`SELECT count(*)::int AS have FROM nodes WHERE workspace_id = $1`, [
      workspaceId,
    ]);
    if (have >= count) return false;
    const t0 = Date.now();
    for (let start = have; start < count; start += 10_000) {
      await owner.query(
        `INSERT INTO nodes (workspace_id, type, name, importance_score, last_touch_at, embedding)
         SELECT $1, 'type_' || (g % ${TYPES}), 'node ' || g || ' ' || (g % ${CLUSTERS}), random(),
                now() - random() * interval '60 days',
                l2_normalize((SELECT array_agg(x + (random() - 0.5) * ${NOISE} ORDER BY o) FROM unnest(c.v::real[])
                  WITH ORDINALITY u(x, o))::vector)
         FROM generate_series($2::int, $3::int) g
         JOIN (SELECT ordinality - 1 AS i, v FROM unnest($4::text[]) WITH ORDINALITY AS t(v, ordinality)) c
           ON c.i = g % ${CLUSTERS}`,
        [workspaceId, start, Math.min(count, start + 10_000) - 1, centres],
      );
    }
    console.error(`[bench] loaded ${count - have} nodes in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return true;
  };
  const loadedBig = await load(big.workspace_id, totalNodes);
  const loadedSmall = await load(small.workspace_id, Math.round(totalNodes / 100));
  if (loadedBig || loadedSmall) {
    const t0 = Date.now();
    await owner.query(`SET maintenance_work_mem = '1GB'`);
    await owner.query(`REINDEX INDEX nodes_embedding_hnsw_idx`);
    await owner.query(`ANALYZE nodes`);
    console.error(`[bench] HNSW rebuilt in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
  await owner.query(`VACUUM (ANALYZE) nodes`);
  // The data ages between runs, and the structural top-k's depth with it: the figures name it.
  const [{ age }] = await owner.query(
    `SELECT extract(epoch FROM now() - max(last_touch_at)) / 86400 AS age FROM nodes WHERE workspace_id = $1`,
    [big.workspace_id],
  );
  return { big, small, ageDays: Number(age) };
}

/** Sets the workspaces' search settings (`{}`: the contract's defaults) for the rows that follow. */
export async function setSearchSettings(
  uow: UnitOfWork,
  workspaces: readonly BenchWorkspace[],
  search: Partial<SearchSettings>,
) {
  for (const t of workspaces) {
    await uow({ workspaceId: t.workspace_id }, (m) =>
      m.query(
        `INSERT INTO workspace_settings (workspace_id, search) VALUES ($1, $2)
         ON CONFLICT (workspace_id) DO UPDATE SET search = excluded.search`,
        [t.workspace_id, JSON.stringify(search)],
      ),
    );
  }
}

/** bench_toast.nodes: the big workspace's rows with the embedding TOASTed, rebuilt when the data changed. */
export async function ensureToastedCopy(owner: DataSource, big: BenchWorkspace) {
  if ((await owner.query(`SELECT to_regclass('bench_toast.nodes') AS t`))[0].t) {
    const [{ copy, source }] = await owner.query(
      `SELECT (SELECT count(*) FROM bench_toast.nodes) AS copy,
              (SELECT count(*) FROM public.nodes WHERE workspace_id = $1) AS source`,
      [big.workspace_id],
    );
    if (copy === source) return;
    await owner.query(`DROP SCHEMA bench_toast CASCADE`);
  }
  const t0 = Date.now();
  await owner.query(`CREATE SCHEMA IF NOT EXISTS bench_toast`);
  await owner.query(`CREATE TABLE bench_toast.nodes (LIKE public.nodes INCLUDING DEFAULTS)`);
  await owner.query(`ALTER TABLE bench_toast.nodes ALTER COLUMN embedding SET STORAGE EXTERNAL`);
  await owner.query(
    `INSERT INTO bench_toast.nodes (id, workspace_id, type, name, properties, importance_score, base_salience,
     reference_count, connection_id, embedding, embedding_error, last_touch_at, created_at, updated_at, is_deleted,
     deleted_at)
    SELECT id, workspace_id, type, name, properties, importance_score, base_salience, reference_count, connection_id,
      embedding, embedding_error, last_touch_at, created_at, updated_at, is_deleted, deleted_at FROM public.nodes
      WHERE workspace_id = $1`,
    [big.workspace_id],
  );
  await owner.query(`SET maintenance_work_mem = '1GB'`);
  await owner.query(`CREATE INDEX ON bench_toast.nodes USING hnsw (embedding vector_cosine_ops)`);
  for (const columns of [
    'workspace_id, last_touch_at DESC',
    'workspace_id, importance_score DESC',
    'workspace_id, type, last_touch_at DESC',
    'workspace_id, type, importance_score DESC',
  ]) {
    await owner.query(`CREATE INDEX ON bench_toast.nodes (${columns}) WHERE NOT is_deleted`);
  }
  await owner.query(`ANALYZE bench_toast.nodes`);
  console.error(`[bench] toasted copy built in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

const SCOPE_SQL = `SELECT set_config('app.workspace_id', $1, true), set_config('app.user_id', '', true),
  set_config('app.key_hash', '', true)`;

/**
 * The statements one POST /v1/ontology/search runs, through pg on `pool` (the app role, under RLS):
 * the settings and the charge (sent with its COMMIT) in one transaction, then the lists the service
 * reads for this mode and these settings (`listsFor`, the service's own rule) and the charge's
 * confirmation (sent with its COMMIT) in a second.
 */
export const searchSql =
  (pool: Pool, t: BenchWorkspace, request: { mode: SearchMode; topK: number; types: string[]; q: string }) =>
  async () => {
    const { mode, topK, types, q } = request;
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(SCOPE_SQL, [t.workspace_id]);
      const settings = (await readOntologyConfig(asManager(client))).search;
      const receipt = await reserveCredits(
        asManager(client),
        {
          tenantId: t.tenant_id,
          workspaceId: t.workspace_id,
          kind: 'ontology.search.hybrid',
          idempotencyKey: `ontology.search.hybrid:${randomUUID()}`,
          freshKey: true,
          pendingSettlement: true,
        },
        { andCommit: true },
      );
      const m = asManager(client);
      const reads = listsFor(mode, weightsFor(mode, settings));
      const embedding = reads.vector ? localEmbedding(q) : undefined;
      await client.query('BEGIN');
      // The index settings and the unflushed commit with the scope, as the unit of work sets them.
      const scan = Object.entries({ ...(embedding ? vectorScanSettings(topK, types) : {}), ...CONFIRM_WITHOUT_FLUSH });
      await client.query(
        `${SCOPE_SQL}${scan.map((_, at) => `, set_config($${2 * at + 2}, $${2 * at + 3}, true)`).join('')}`,
        [t.workspace_id, ...scan.flat()],
      );
      const scope = { workspaceId: t.workspace_id, topK, types };
      await vectorAndStructural(m, {
        ...scope,
        embedding,
        structural: reads.structural,
        minSimilarity: settings.min_similarity_threshold,
      });
      if (reads.keyword) await keywordCandidates(m, { ...scope, q });
      await confirmReservations(m, [receipt.ledger_id], { andCommit: true });
    } finally {
      client.release();
    }
  };
