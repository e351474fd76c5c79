/**
 * `npm run bench -- <name>` runs bench/<name>.ts. Benchmarks are not tests: they print figures
 * next to an anchor measured in the same run, as ratios, and never run under `npm test`.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';

async function main() {
  const [name, ...args] = process.argv.slice(2);
  const available = readdirSync(__dirname)
    .filter((file) => file.endsWith('.ts') && file !== 'main.ts')
    .map((file) => path.basename(file, '.ts'));
  if (!name || !available.includes(name)) {
    console.error(`usage: npm run bench -- <${available.join('|')}> [options]`);
    process.exit(2);
  }
  const bench = (await import(path.join(__dirname, `${name}.ts`))) as { run(args: string[]): Promise<void> };
  await bench.run(args);
  process.exit(0);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
