import type { CodeService } from '../src/code/service';
import type { CodeIndexInput } from '../src/code/workflow';

/** The code-index workflow's step: a thin adapter over the code service. */
export function createCodeActivities(deps: { services: { code: CodeService } }) {
  return {
    /** Applies one ingest batch in one transaction; idempotent (keys and edge ends), so retries are harmless. */
    applyCodeBatch: (input: CodeIndexInput) => deps.services.code.applyBatch(input),
  };
}
