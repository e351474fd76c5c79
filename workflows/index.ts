// The worker's workflow bundle: every workflow type Weft runs. Deterministic code only.

export * from './agents';
export * from './code';
export * from './communities';
export * from './embeddings';
export * from './graph-maintenance';
export * from './graph-versions';
export * from './maintenance';
export * from './merges';
export * from './prompt';
export * from './run-callbacks';
export * from './run-flow';
export * from './run-schedules';
export * from './runs';
export * from './triggers';
