import { Foundation1763780000000 } from './1763780000000-foundation';
import { OntologyConfig1763780001000 } from './1763780001000-ontology-config';

/** Every migration, in order. Later features append theirs here (timestamped names keep the order). */
export const migrations = [Foundation1763780000000, OntologyConfig1763780001000];
