import type { EntityManager } from 'typeorm';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { ValidationFailedError } from '../platform/errors';
import { readStoredSettings, saveSettings } from './repository';
import type { OntologyConfigPatch } from './schemas';
import { OntologyConfig } from './schemas';

type Group = keyof OntologyConfig;
const GROUPS: Group[] = ['search', 'importance', 'resolver', 'staging'];

/** The effective settings of the transaction's workspace: stored overrides over the contract's defaults. */
export async function readOntologyConfig(m: EntityManager): Promise<OntologyConfig> {
  const row = await readStoredSettings(m);
  return OntologyConfig.parse({
    search: row?.search ?? {},
    importance: row?.importance ?? {},
    resolver: row?.resolver ?? {},
    staging: row?.staging ?? {},
  });
}

export function createOntologyConfigService(deps: { uow: UnitOfWork }) {
  return {
    get: (principal: Principal) => deps.uow(scopeOf(principal), readOntologyConfig),

    /** Merges the patch into the stored overrides; the merged result must still be coherent. */
    patch: (principal: Principal, patch: OntologyConfigPatch) =>
      deps.uow(scopeOf(principal), async (m) => {
        const current = await readOntologyConfig(m);
        const next = OntologyConfig.parse(
          Object.fromEntries(GROUPS.map((group) => [group, { ...current[group], ...patch[group] }])),
        );
        if (next.importance.min_importance > next.importance.max_importance) {
          throw new ValidationFailedError([
            {
              loc: ['body', 'importance', 'min_importance'],
              msg: 'min_importance must not exceed max_importance',
              type: 'value_error',
            },
          ]);
        }
        await saveSettings(m, principal.workspaceId, next);
        return next;
      }),
  };
}

export type OntologyConfigService = ReturnType<typeof createOntologyConfigService>;
