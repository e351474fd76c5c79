import type { ApiResponse } from './http';
import { as } from './http';

/**
 * Calls `POST /v1/cap/<tool>` as one credential (on another stack when `baseUrl` is given), with an
 * Idempotency-Key when given.
 */
export const capClient =
  (token: string, baseUrl?: string) =>
  <T = any>(tool: string, body: unknown = {}, idempotencyKey?: string): Promise<ApiResponse<T>> =>
    as(token, baseUrl).post<T>(
      `/v1/cap/${tool}`,
      body,
      idempotencyKey === undefined ? undefined : { 'Idempotency-Key': idempotencyKey },
    );
