import { startStack, stopStack } from './stack';

/** Mocha root hooks: one stack for the whole suite. */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(120_000);
    await startStack();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopStack();
  },
};
