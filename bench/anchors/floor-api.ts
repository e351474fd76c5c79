/**
 * The hand-written durable run's API (bench/runs.ts's "floor" anchor): the bookkeeping any service
 * that runs agent steps durably needs, with no framework beyond bare Koa, one `pg.Pool` and the
 * Temporal client. `POST /runs` with `{ "steps": [{ "tool": … }, …] }`: the API key looked up by its
 * hash, the run and its step rows committed, then its workflow started (after the commit, so the
 * workflow never sees a run that is not there); answers 202 with the run id.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import Koa from 'koa';
import type { Pool } from 'pg';
import { inTransaction } from './floor-tables';

export const floorWorkflowId = (runId: string) => `floor-${runId}`;

const MAX_BODY_CHARACTERS = 64 * 1024;
const MAX_STEPS = 20;

/** The body's step tools, or undefined: the little validation a hand-written service would still do. */
async function stepTools(ctx: Koa.Context): Promise<string[] | undefined> {
  let text = '';
  for await (const chunk of ctx.req) {
    text += chunk;
    if (text.length > MAX_BODY_CHARACTERS) return undefined;
  }
  let steps: unknown;
  try {
    steps = (JSON.parse(text) as { steps?: unknown }).steps;
  } catch {
    return undefined;
  }
  const valid =
    Array.isArray(steps) &&
    steps.length > 0 &&
    steps.length <= MAX_STEPS &&
    steps.every((step) => typeof step?.tool === 'string');
  return valid ? (steps as { tool: string }[]).map((step) => step.tool) : undefined;
}

export function createFloorApi(deps: { pool: Pool; temporal: Client; taskQueue: string }): Koa {
  const { pool, temporal, taskQueue } = deps;
  const app = new Koa();
  app.use(async (ctx) => {
    // Koa answers 404 when nothing sets a body.
    if (ctx.method !== 'POST' || ctx.path !== '/runs') return;
    const token = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'))?.[1];
    if (!token) {
      ctx.status = 401;
      return;
    }
    const { rows } = await pool.query<{ workspace_id: string; tenant_id: string }>(
      `SELECT k.workspace_id, w.tenant_id FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
       WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())`,
      [createHash('sha256').update(token).digest('hex')],
    );
    const key = rows[0];
    if (!key) {
      ctx.status = 401;
      return;
    }
    const tools = await stepTools(ctx);
    if (!tools) {
      ctx.status = 400;
      return;
    }
    const runId = randomUUID();
    await inTransaction(pool, async (c) => {
      await c.query(
        `INSERT INTO bench_floor_runs (id, workspace_id, tenant_id, status) VALUES ($1, $2, $3, 'QUEUED')`,
        [runId, key.workspace_id, key.tenant_id],
      );
      await c.query(
        `INSERT INTO bench_floor_steps (run_id, index, tool, status)
         SELECT $1, s.i - 1, s.tool, 'PENDING' FROM unnest($2::text[]) WITH ORDINALITY AS s(tool, i)`,
        [runId, tools],
      );
    });
    await temporal.workflow.start('floorRunWorkflow', {
      workflowId: floorWorkflowId(runId),
      taskQueue,
      args: [{ runId, tenantId: key.tenant_id, steps: tools.length }],
    });
    ctx.status = 202;
    ctx.body = { run_id: runId };
  });
  return app;
}
