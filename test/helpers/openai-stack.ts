import type { FakeOpenAI } from './fake-openai';
import { startFakeOpenAI } from './fake-openai';
import type { Stack } from './stack';
import { bootStack } from './stack';

export interface OpenAIStack {
  /** The fake OpenAI-compatible server on loopback that the stack's model and embeddings call. */
  fake: FakeOpenAI;
  /** A second, complete Weft stack configured for the OpenAI path against `fake`. */
  stack: Stack;
}

/**
 * Boots, for the enclosing mocha block, a fake OpenAI server and a stack that uses it (no retries,
 * a short timeout, so provider failures show quickly), and stops both after the block.
 */
export function useOpenAIStack(overrides: Record<string, string> = {}): OpenAIStack {
  const handle = {} as OpenAIStack;
  let stop: (() => Promise<void>) | undefined;
  before(async () => {
    handle.fake = await startFakeOpenAI();
    const booted = await bootStack({
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: handle.fake.baseUrl,
      OPENAI_MAX_RETRIES: '0',
      OPENAI_TIMEOUT_MS: '1500',
      ...overrides,
    });
    handle.stack = booted.stack;
    stop = booted.stop;
  });
  after(async () => {
    await stop?.();
    await handle.fake?.close();
  });
  return handle;
}
