import { FEATURES } from './features';

/** Every TypeORM entity: each feature's, from its manifest. */
export const entities = FEATURES.flatMap((feature) => feature.entities ?? []);
