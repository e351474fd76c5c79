import { startStack, stopStack } from './stack';

/**
 * Mocha root hooks: one stack for the whole suite, on a Temporal server of its own; at the end the
 * stack stops and the suite fails if it left a schedule or a running workflow behind.
 */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(120_000);
    await startStack();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(120_000);
    await stopStack();
  },
};
