import type { EntityManager } from 'typeorm';
import { LessThan } from 'typeorm';
import { RevokedToken } from './entities';

/**
 * Lists a user JWT as revoked (idempotent: the first revocation time stays) and drops the rows of
 * tokens that have expired anyway, so the table holds only what authentication must still refuse.
 * Operator work on the owner connection: the app role may only read the table.
 */
export async function revokeUserToken(
  m: EntityManager,
  token: { jti: string; expiresAt: Date },
): Promise<RevokedToken> {
  const repository = m.getRepository(RevokedToken);
  await repository.delete({ expiresAt: LessThan(new Date()) });
  await repository.createQueryBuilder().insert().values(token).orIgnore().execute();
  return repository.findOneByOrFail({ jti: token.jti });
}
