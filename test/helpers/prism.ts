import { spawn } from 'node:child_process';
import { openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, isListening } from '../../src/platform/temporal/dev-server';
import { eventually } from './eventually';

/**
 * Third-party check of the contract, on demand (not part of `npm test`): with WEFT_TEST_PRISM set
 * to a Prism CLI (`@stoplight/prism-cli`, installed outside the project), the suite's main stack is
 * reached through `prism proxy`, which logs every request and response that breaks the OpenAPI
 * document to WEFT_TEST_PRISM_LOG (default: a file in the temp directory).
 */
export async function prismProxy(target: string): Promise<{ url: string; stop(): void } | undefined> {
  const prism = process.env.WEFT_TEST_PRISM;
  if (!prism) return undefined;
  const document = await (await fetch(`${target}/v1/openapi.json`)).text();
  const file = path.join(tmpdir(), `weft-prism-${process.pid}.json`);
  writeFileSync(file, document);
  const port = await freePort();
  const log = process.env.WEFT_TEST_PRISM_LOG ?? path.join(tmpdir(), `weft-prism-${process.pid}.log`);
  const out = openSync(log, 'w');
  const child = spawn(prism, ['proxy', file, target, '--port', String(port), '--errors=false'], {
    stdio: ['ignore', out, out],
  });
  const url = `http://127.0.0.1:${port}`;
  await eventually(() => isListening(`127.0.0.1:${port}`), { what: 'prism proxy', timeoutMs: 60_000 });
  console.error(`[prism] proxying ${target} at ${url}; log ${log}`);
  return { url, stop: () => child.kill('SIGTERM') };
}
