// The worker's workflow bundle: every workflow type Weft runs. Deterministic code only.
export * from './maintenance';
export * from './prompt';
export * from './merges';
export * from './embeddings';
export * from './graph-maintenance';
