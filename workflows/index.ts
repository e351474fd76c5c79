// The worker's workflow bundle: every workflow type Weft runs. Deterministic code only.
export * from './maintenance';
