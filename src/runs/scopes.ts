import type { ScopeName } from '../platform/auth/scopes';

/**
 * The scope each run operation needs, whichever door it comes through: the REST route
 * (`src/runs/routes.ts`) and the tool doing the same work (`src/runs/tools.ts`) both read it here.
 */
export const RUN_SCOPES = {
  dispatch: 'runs:write',
  read: 'runs:read',
  cancel: 'runs:write',
} as const satisfies Record<string, ScopeName>;
