import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';

const ROOT = path.resolve(__dirname, '..');
const WORKFLOWS_DIR = path.join(ROOT, 'workflows');
const CACHE_DIR = path.join(ROOT, '.data', 'workflow-bundles');

// The bundle depends on the workflow sources, whatever they import from src/ and activities/,
// and the SDK version; hashing all of them (a superset) into the file name keeps it fresh.
const SOURCE_DIRS = ['workflows', 'src', 'activities'].map((dir) => path.join(ROOT, dir));

function sourceHash(): string {
  const hash = createHash('sha256');
  for (const dir of SOURCE_DIRS) {
    for (const file of readdirSync(dir, { recursive: true }).map(String).sort()) {
      if (!file.endsWith('.ts')) continue;
      hash.update(file).update(readFileSync(path.join(dir, file)));
    }
  }
  hash.update(readFileSync(path.join(ROOT, 'node_modules/@temporalio/workflow/package.json')));
  return hash.digest('hex').slice(0, 16);
}

/**
 * The prebuilt workflow bundle: built once per change of `workflows/`, then reused, so a worker
 * starts without running webpack (production practice in Temporal's samples).
 */
export async function loadWorkflowBundle(options: { tracingModule?: string } = {}): Promise<{ code: string }> {
  // With tracing on, a bundle of its own that also holds the OpenTelemetry workflow interceptors;
  // the bundle without them (tracing off, the replay tests) stays as it was.
  const variant = options.tracingModule ? '-otel' : '';
  const file = path.join(CACHE_DIR, `workflows-${sourceHash()}${variant}.js`);
  if (existsSync(file)) return { code: readFileSync(file, 'utf8') };
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve(WORKFLOWS_DIR),
    // Keeps payloads the codec refused (plaintext started by hand) from workflow code.
    workflowInterceptorModules: [
      require.resolve(path.join(WORKFLOWS_DIR, 'interceptors')),
      ...(options.tracingModule ? [options.tracingModule] : []),
    ],
    logger: { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} },
  });
  mkdirSync(CACHE_DIR, { recursive: true });
  writeFileSync(file, code);
  return { code };
}

if (require.main === module) {
  loadWorkflowBundle().then(
    () => console.log('workflow bundle ready'),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
