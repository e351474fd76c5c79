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
    operationId: 'getLiveness',
    summary: 'Liveness: the process answers',
    description: 'Answers 200 while the process runs; checks nothing else.',
    tags: ['health'],
    public: true,
    response: Liveness,
    handler: async () => ({ status: 'ok' as const }),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/health/ready',
    operationId: 'getReadiness',
    summary: 'Readiness: the database and Temporal answer (503 otherwise)',
    description: 'Checks that Postgres and the Temporal server answer; 503 with the same body when either does not.',
    tags: ['health'],
    public: true,
    response: Readiness,
    errors: { 503: { description: 'A dependency does not answer', body: Readiness } },
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
