import { Foundation1763780000000 } from './1763780000000-foundation';

/** Every migration, in order. Later features append theirs here. */
export const migrations = [Foundation1763780000000];
