import type { EntityManager } from 'typeorm';
import { queryFirst } from '../platform/db/query';
import { WorkspaceSettings } from './entities';

export interface StoredSettings {
  search: Record<string, unknown>;
  importance: Record<string, unknown>;
  resolver: Record<string, unknown>;
  staging: Record<string, unknown>;
}

/**
 * The transaction's workspace's stored overrides, or undefined when it has none. Raw SQL: every
 * search, prompt and node creation reads this (a hot path), and the row is chosen by the RLS
 * helper `weft_current_workspace()`, so callers need not pass the workspace.
 */
export const readStoredSettings = (m: EntityManager) =>
  queryFirst<StoredSettings>(
    m,
    `SELECT search, importance, resolver, staging FROM workspace_settings
     WHERE workspace_id = weft_current_workspace()`,
  );

export async function saveSettings(m: EntityManager, workspaceId: string, settings: StoredSettings): Promise<void> {
  await m
    .getRepository(WorkspaceSettings)
    .upsert({ workspaceId, ...settings, updatedAt: () => 'now()' }, { conflictPaths: ['workspaceId'] });
}
