import type { DataSource } from 'typeorm';
import { z } from 'zod';
import { defineRoute } from '../platform/api/route';
import type { TemporalHandle } from '../platform/temporal/connection';
import { temporalAnswers } from '../platform/temporal/connection';

const Liveness = z.object({ status: z.literal('ok') }).meta({ id: 'Liveness' });
const Readiness = z
  .object({
    status: z.enum(['ready', 'unavailable']),
    checks: z.object({ database: z.enum(['ok', 'fail']), temporal: z.enum(['ok', 'fail']) }),
  })
  .meta({ id: 'Readiness' });

async function databaseAnswers(dataSource: DataSource): Promise<boolean> {
  try {
    await dataSource.query('SELECT 1');
    return true;
  } catch {
    return false;
  }
}

export const healthRoutes = (deps: { dataSource: DataSource; temporal: TemporalHandle }) => [
  defineRoute({
    method: 'get',
    path: '/v1/health',
    summary: 'Liveness: the process answers',
    tags: ['health'],
    public: true,
    response: Liveness,
    handler: async () => ({ status: 'ok' as const }),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/health/ready',
    summary: 'Readiness: the database and Temporal answer (503 otherwise)',
    tags: ['health'],
    public: true,
    response: Readiness,
    errors: { 503: 'A dependency does not answer' },
    handler: async ({ ctx }) => {
      const [database, temporal] = await Promise.all([
        databaseAnswers(deps.dataSource),
        temporalAnswers(deps.temporal),
      ]);
      const ready = database && temporal;
      ctx.status = ready ? 200 : 503;
      return {
        status: ready ? ('ready' as const) : ('unavailable' as const),
        checks: {
          database: database ? ('ok' as const) : ('fail' as const),
          temporal: temporal ? ('ok' as const) : ('fail' as const),
        },
      };
    },
  }),
];
