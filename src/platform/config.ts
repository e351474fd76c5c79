import { z } from 'zod';

// Development-only secret: refused when NODE_ENV=production (see loadConfig).
const DEV_JWT_SECRET = 'weft-development-secret-change-me-0123456789';

const booleanFlag = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');

/** Every environment variable Weft reads, with the defaults that work on a development machine. */
export const EnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  HOST: z.string().default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  /** The application's connection: a role that owns no table, so row-level security applies. */
  DATABASE_URL: z.string().url().default('postgres://weft_app@127.0.0.1:5432/weft'),
  /** The migration role, which owns the schema. */
  DATABASE_OWNER_URL: z.string().url().default('postgres://weft_owner@127.0.0.1:5432/weft'),
  /** A superuser connection, used only by set-up to create roles, the database and the extension. */
  DATABASE_ADMIN_URL: z.string().url().default('postgres://postgres@127.0.0.1:5432/postgres'),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),

  /** Which parts this process runs: both (npm start), or one of them (docker compose runs two). */
  WEFT_PROCESS: z.enum(['all', 'api', 'worker']).default('all'),

  TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().default('weft'),
  TEMPORAL_UI_PORT: z.coerce.number().int().min(1).max(65535).default(8233),
  /** `auto` starts `temporal server start-dev` when nothing answers at TEMPORAL_ADDRESS. */
  TEMPORAL_DEV_SERVER: z.enum(['auto', 'never']).default('auto'),

  JWT_SECRET: z.string().min(32).default(DEV_JWT_SECRET),
  JWT_ISSUER: z.string().default('weft'),
  JWT_AUDIENCE: z.string().default('weft-api'),
  MCP_JWT_AUDIENCE: z.string().default('weft-mcp'),
  USER_JWT_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .default(30 * 24 * 3600),
  MCP_TOKEN_DEFAULT_TTL_DAYS: z.coerce.number().int().min(1).max(365).default(30),

  OPENAI_API_KEY: z.string().optional(),
  OPENAI_BASE_URL: z.string().url().optional(),
  OPENAI_CHAT_MODEL: z.string().default('gpt-4o-mini'),
  OPENAI_EMBEDDING_MODEL: z.string().default('text-embedding-3-small'),
  OPENAI_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  OPENAI_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),

  /** Key-usage counters are batched in memory and flushed this often. */
  USAGE_FLUSH_INTERVAL_MS: z.coerce.number().int().min(50).default(1000),
  REQUEST_LOGGING: booleanFlag.default(true),

  /** An agent session whose last heartbeat is older than this is expired by the sweeper (its claims abandoned). */
  AGENT_SESSION_TTL_SECONDS: z.coerce.number().int().min(1).default(300),
});

export type Config = z.infer<typeof EnvSchema>;

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable counts as unset (docker compose passes `${OPENAI_BASE_URL:-}` as '').
  const set = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = EnvSchema.safeParse(set);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid environment:\n${lines.join('\n')}`);
  }
  const config = parsed.data;
  if (config.NODE_ENV === 'production' && config.JWT_SECRET === DEV_JWT_SECRET) {
    throw new ConfigError('JWT_SECRET must be set in production');
  }
  return config;
}

/**
 * The test suite and the benchmarks run against their own databases (`<name>_test`, `<name>_bench`)
 * so that `npm start` data survives them. Set-up, the mocha bootstrap and the bench runner all call
 * this, so they always agree.
 */
export function withDatabaseSuffix(env: NodeJS.ProcessEnv, suffix: '_test' | '_bench'): NodeJS.ProcessEnv {
  const base = EnvSchema.parse({ ...env, NODE_ENV: 'test' });
  const rename = (url: string) => {
    const parsed = new URL(url);
    if (!parsed.pathname.endsWith(suffix)) parsed.pathname = `${parsed.pathname}${suffix}`;
    return parsed.toString();
  };
  return {
    ...env,
    NODE_ENV: 'test',
    DATABASE_URL: rename(base.DATABASE_URL),
    DATABASE_OWNER_URL: rename(base.DATABASE_OWNER_URL),
  };
}

export const withTestDatabase = (env: NodeJS.ProcessEnv) => withDatabaseSuffix(env, '_test');
