import { RevokedToken } from './entities';

/** Authentication's own table: revoked JWTs. */
export const authFeature = {
  name: 'auth',
  entities: [RevokedToken],
};
