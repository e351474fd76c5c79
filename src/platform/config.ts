import { createHash } from 'node:crypto';
import { z } from 'zod';
import { VERSION_RETENTION } from '../rules/graph';
import { LIMITS } from '../rules/limits';

// Development-only secret: refused when NODE_ENV=production (see loadConfig).
const DEV_JWT_SECRET = 'weft-development-secret-change-me-0123456789';

/** Secrets that are someone's example text, not a secret: refused in production. */
const PLACEHOLDER =
  /change[-_ ]?me|replace[-_ ]?me|placeholder|example|your[-_ ]?secret|weft-development|^(secret|password)/i;

/** A production secret must carry at least this many bits by a Shannon estimate of its symbols. */
const MIN_SECRET_BITS = 128;

/**
 * Bits of entropy of `symbols` estimated from their own frequencies (length × Shannon entropy):
 * `x` × 40 is 0, 32 random bytes are about 155, a 43-character base64 secret about 215.
 */
export function estimatedEntropyBits(symbols: ArrayLike<string | number>): number {
  const counts = new Map<string | number, number>();
  for (const symbol of Array.from(symbols)) counts.set(symbol, (counts.get(symbol) ?? 0) + 1);
  let perSymbol = 0;
  for (const count of counts.values()) {
    const p = count / symbols.length;
    perSymbol -= p * Math.log2(p);
  }
  return perSymbol * symbols.length;
}

const HEX_BYTES = /^(?:[0-9a-fA-F]{2})+$/;

/** The step from each symbol to the next: a counting or stepping sequence has one step, repeated. */
function steps(codes: number[]): number[] {
  return codes.slice(1).map((code, at) => code - codes[at]!);
}

/** The shortest prefix whose repetition makes the whole sequence (the sequence itself when none). */
function repeatedUnit(codes: number[]): number[] {
  for (let period = 1; period <= codes.length / 2; period++) {
    let repeats = true;
    for (let at = period; at < codes.length && repeats; at++) repeats = codes[at] === codes[at - period];
    if (repeats) return codes.slice(0, period);
  }
  return codes;
}

/**
 * True for a progression (one step between most neighbours, as in `abcdef…` or 00 01 02 …) or a
 * unit repeated, looked at in the symbols and, for hex text, in the bytes it spells. Symbol
 * frequencies alone score `abcdefghijklmnopqrstuvwxyzABCDEF` like random text (review L-7).
 */
export function isPatterned(value: string | Buffer): boolean {
  const sequences = [typeof value === 'string' ? Array.from(value, (symbol) => symbol.codePointAt(0)!) : [...value]];
  if (typeof value === 'string' && HEX_BYTES.test(value)) sequences.push([...Buffer.from(value, 'hex')]);
  return sequences.some((codes) => {
    const counts = new Map<number, number>();
    for (const step of steps(codes)) counts.set(step, (counts.get(step) ?? 0) + 1);
    const commonest = Math.max(0, ...counts.values());
    return commonest * 2 >= codes.length - 1 || repeatedUnit(codes).length < codes.length;
  });
}

/** 32 or more bytes, written as hex (64+ hex digits) or base64 (standard or URL-safe). */
function decodeKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  let bytes: Buffer | undefined;
  if (HEX_BYTES.test(trimmed)) bytes = Buffer.from(trimmed, 'hex');
  else if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) bytes = Buffer.from(trimmed, 'base64');
  return bytes && bytes.length >= 32 ? bytes : undefined;
}

const encryptionKey = z.string().transform((text, ctx) => {
  const key = decodeKey(text);
  if (!key) {
    ctx.addIssue({ code: 'custom', message: 'must be 32 or more bytes, as hex or base64' });
    return z.NEVER;
  }
  return key;
});

const booleanFlag = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');

/** Every environment variable Weft reads, with the defaults that work on a development machine. */
export const EnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  HOST: z.string().default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  /** The application's connection: a role that owns no table, so row-level security applies. */
  DATABASE_URL: z.string().url().default('postgres://weft_app@127.0.0.1:5432/weft'),
  /**
   * A streaming-replication standby of DATABASE_URL (issue 44 item 4), as the same non-owner role. Set,
   * the read routes read from it (src/platform/db/standby.ts); unset (the default), everything reads
   * the primary. `bash scripts/standby.sh` makes one on this machine (port 5433).
   */
  DATABASE_REPLICA_URL: z.string().url().optional(),
  /** The migration role, which owns the schema. */
  DATABASE_OWNER_URL: z.string().url().default('postgres://weft_owner@127.0.0.1:5432/weft'),
  /** A superuser connection, used only by set-up to create roles, the database and the extension. */
  DATABASE_ADMIN_URL: z.string().url().default('postgres://postgres@127.0.0.1:5432/postgres'),
  /** The API's pool; the worker has its own (both in one process with WEFT_PROCESS=all). */
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  DATABASE_WORKER_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  /** Longest statement of a request; Postgres cancels it (the client gets a 504). */
  DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(1).default(30_000),
  /** Longest statement of an activity: maintenance passes legitimately run longer than a request. */
  DATABASE_WORKER_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(1).default(300_000),
  /** A transaction left open and idle this long is ended by Postgres, releasing its locks. */
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: z.coerce.number().int().min(1).default(60_000),
  /** Longest wait for a pooled connection (or a new one); then the request is a 503. */
  DATABASE_ACQUIRE_TIMEOUT_MS: z.coerce.number().int().min(1).default(5_000),

  /** Which parts this process runs: both (npm start), or one of them (docker compose runs two). */
  WEFT_PROCESS: z.enum(['all', 'api', 'worker']).default('all'),

  TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().default('weft'),
  TEMPORAL_UI_PORT: z.coerce.number().int().min(1).max(65535).default(8233),
  /** `auto` starts `temporal server start-dev` when nothing answers at TEMPORAL_ADDRESS. */
  TEMPORAL_DEV_SERVER: z.enum(['auto', 'never']).default('auto'),
  /** Unset: TLS when an API key or any TLS file is given (as the Temporal CLI decides); `false` forces plaintext. */
  TEMPORAL_TLS: booleanFlag.optional(),
  TEMPORAL_TLS_CA_PATH: z.string().optional(),
  /** mTLS: the client certificate and its key, both or neither. */
  TEMPORAL_TLS_CERT_PATH: z.string().optional(),
  TEMPORAL_TLS_KEY_PATH: z.string().optional(),
  TEMPORAL_TLS_SERVER_NAME: z.string().optional(),
  /** Temporal Cloud (or any server with API-key auth): sent as `Authorization: Bearer`. */
  TEMPORAL_API_KEY: z.string().optional(),
  /**
   * The longest wait between the Temporal client's reconnect attempts (issue 44 item 6): gRPC's own
   * default grows to 2 minutes, so a client would find a returned server up to a minute late.
   */
  TEMPORAL_RECONNECT_BACKOFF_MAX_MS: z.coerce.number().int().min(100).max(120_000).default(2000),
  /**
   * The origin clients reach this API at (`https://weft.example.com`), as OAuth's metadata names it
   * (src/oauth/): behind a TLS proxy the request's own origin says http. Required in production;
   * elsewhere, unset, the request's origin.
   */
  PUBLIC_URL: z.string().url().optional(),
  /**
   * Origins besides PUBLIC_URL's whose browser pages may call `/mcp` (comma-separated, e.g. the MCP
   * Inspector's `http://localhost:6274`): a request whose `Origin` is another is 403 (MCP's
   * Streamable HTTP rules, against DNS rebinding). A request without `Origin` is not a browser's.
   */
  MCP_ALLOWED_ORIGINS: z
    .string()
    .default('')
    .transform((text, ctx) => {
      const origins = text
        .split(',')
        .map((entry) => entry.trim())
        .filter(Boolean);
      for (const origin of origins) {
        if (!URL.canParse(origin) || new URL(origin).origin !== origin) {
          ctx.addIssue({ code: 'custom', message: `${origin} is not an origin (scheme://host[:port])` });
        }
      }
      return origins;
    }),
  /**
   * How many reverse proxies in front of the API append to `X-Forwarded-For` (docker compose's nginx: 1).
   * 0 (the default): the socket's peer is the client and the header is ignored (src/platform/api/client-address.ts).
   */
  TRUST_PROXY_HOPS: z.coerce.number().int().min(0).max(5).default(0),
  /**
   * Metrics (docs/operations.md): when set, `GET /metrics` (the API's and a worker's) asks for
   * `Authorization: Bearer <METRICS_TOKEN>`; unset, it answers whoever reaches the port. Required in
   * production unless METRICS_PUBLIC says otherwise: the figures are every workspace's activity (review NM-6).
   */
  METRICS_TOKEN: z.string().min(16).optional(),
  /**
   * Production only: `true` serves `/metrics` without METRICS_TOKEN, for an operator who fences the port
   * by the network instead. An explicit choice, never a default.
   */
  METRICS_PUBLIC: booleanFlag.default(false),
  /**
   * Issue 43 item 1: how many activities and workflow tasks one worker holds at once. Fairness between
   * workspaces applies to the tasks waiting in Temporal's queue; the ones a worker has taken wait in it
   * first come, first served (for its database pool, its event loop), so a worker that takes far more
   * than it can run at once turns one workspace's flood into everyone's wait. Unset: the SDK's 100 and 40.
   */
  WORKER_MAX_ACTIVITIES: z.coerce.number().int().min(1).max(1000).optional(),
  WORKER_MAX_WORKFLOW_TASKS: z.coerce.number().int().min(2).max(1000).optional(),
  /** A worker process serves its own `GET /metrics` on this port; unset, it serves none. */
  WORKER_METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  WORKER_METRICS_HOST: z.string().default('127.0.0.1'),
  /** Origins (comma-separated) of a Temporal UI allowed to call the codec endpoint from the browser. */
  TEMPORAL_UI_ORIGIN: z.string().optional(),
  /**
   * Development only (refused in production): serve `/v1/temporal-codec/dev/*`, which decodes every
   * workspace for callers on loopback without a credential. `npm start` turns it on for the dev server
   * it starts, whose UI it points there (`--ui-codec-endpoint`).
   */
  TEMPORAL_UI_DEV_CODEC: booleanFlag.default(false),

  /**
   * Encrypts every Temporal payload (AES-256-GCM). Required in production; in development and tests a
   * key derived from JWT_SECRET. Retired keys (comma-separated) still open histories written before a rotation.
   */
  WEFT_ENCRYPTION_PREVIOUS_KEYS: z.string().optional(),

  JWT_SECRET: z.string().min(32).default(DEV_JWT_SECRET),
  /**
   * The key that seals prompts in workflow inputs and encrypts Temporal payloads: a secret of its
   * own, never derived from JWT_SECRET in production. Development and tests derive one.
   */
  WEFT_ENCRYPTION_KEY: encryptionKey.optional(),
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

  /**
   * Requests per second each credential may make (0 turns the limit off), plus a reserve of
   * RATE_LIMIT_BURST requests per minute for bursts above it. Counted in this process.
   */
  RATE_LIMIT_RPS: z.coerce.number().int().min(0).default(100),
  RATE_LIMIT_BURST: z.coerce.number().int().min(0).default(500),
  /** Refused credentials (401) per source address and minute before 429; 0: not limited. */
  RATE_LIMIT_AUTH_FAILURES: z.coerce.number().int().min(0).default(LIMITS.authFailuresPerMinute),
  /**
   * The webhook intake's own limits per minute, counted in this process before a body is read
   * (0 turns one off): requests per source address, requests per slug, and redeliveries per trigger.
   */
  WEBHOOK_INTAKE_PER_SOURCE: z.coerce.number().int().min(0).default(LIMITS.webhook.intake.perSource),
  WEBHOOK_INTAKE_PER_SLUG: z.coerce.number().int().min(0).default(LIMITS.webhook.intake.perSlug),
  WEBHOOK_REDELIVERIES_PER_TRIGGER: z.coerce
    .number()
    .int()
    .min(0)
    .default(LIMITS.webhook.intake.redeliveriesPerTrigger),
  /**
   * How long POST /v1/ontology/prompt waits for its workflow before answering 504; the prompt runs
   * on (at most its 10-minute execution timeout) and a retry with the same correlation id gets it.
   */
  PROMPT_DEADLINE_MS: z.coerce.number().int().min(100).default(120_000),

  /** Key-usage counters are batched in memory and flushed this often. */
  USAGE_FLUSH_INTERVAL_MS: z.coerce.number().int().min(50).default(1000),
  REQUEST_LOGGING: booleanFlag.default(true),
  /**
   * Whether every response (and every tool's output) is checked against its schema before it is sent (a
   * mismatch is a 500; src/platform/api/answer-check.ts). Default: on, except with NODE_ENV=production, where the
   * check's cost is paid by every request for a bug the test suite (which keeps it on) would catch.
   */
  RESPONSE_VALIDATION: booleanFlag.optional(),

  /** An agent session whose last heartbeat is older than this is expired by the sweeper (its claims abandoned). */
  AGENT_SESSION_TTL_SECONDS: z.coerce.number().int().min(1).default(300),
  /** A run waiting for approval re-reads its approval row this often, in case the resolve's signal was lost. */
  RUN_APPROVAL_RECHECK_SECONDS: z.coerce.number().int().min(1).default(LIMITS.runs.approvalRecheckSeconds),
  /** After this many re-reads a waiting run continues as new, so its history stays small however long it waits. */
  RUN_APPROVAL_RECHECKS_PER_RUN: z.coerce.number().int().min(1).default(LIMITS.runs.approvalRechecksPerRun),
  /** How often a run event stream with nothing to say sends a keep-alive comment (tests shorten it). */
  RUN_EVENTS_KEEPALIVE_MS: z.coerce
    .number()
    .int()
    .min(10)
    .default(LIMITS.runs.events.keepAliveSeconds * 1000),
  /**
   * How often an open event stream re-checks its credential (revoked, expired, its user removed), besides
   * each read it makes; never longer than LIMITS.streams (tests shorten it).
   */
  STREAM_CREDENTIAL_RECHECK_MS: z.coerce
    .number()
    .int()
    .min(10)
    .max(LIMITS.streams.credentialRecheckSeconds * 1000)
    .default(LIMITS.streams.credentialRecheckSeconds * 1000),
  /** A run event stream ends after this with a `reconnect` event; the client resumes with Last-Event-ID. */
  STREAM_MAX_LIFETIME_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(24 * 3600 * 1000)
    .default(LIMITS.streams.maxLifetimeSeconds * 1000),

  /** Open event streams per credential and per workspace in one API process; a stream beyond is 429. */
  STREAM_MAX_PER_CREDENTIAL: z.coerce.number().int().min(1).default(LIMITS.streams.perCredential),
  STREAM_MAX_PER_WORKSPACE: z.coerce.number().int().min(1).default(LIMITS.streams.perWorkspace),
  /**
   * Run schedules (issue 43 item 3): the shortest interval a schedule may have, or the shortest gap its
   * cron may allow (shorter is 422), and the runs one workspace's schedules may dispatch in any hour
   * (a fire beyond is skipped and recorded). The test suite lowers the first.
   */
  SCHEDULE_MIN_INTERVAL_SECONDS: z.coerce
    .number()
    .int()
    .min(LIMITS.schedules.floorIntervalSeconds)
    .default(LIMITS.schedules.minIntervalSeconds),
  SCHEDULE_FIRES_PER_HOUR: z.coerce.number().int().min(1).default(LIMITS.schedules.firesPerHour),
  /** Bytes a stream may hold unread by its client before it is cut off. */
  STREAM_MAX_BUFFERED_BYTES: z.coerce.number().int().min(1024).default(LIMITS.streams.bufferedBytes),

  /**
   * Run callbacks (issue 26) refuse private, loopback and link-local addresses, checked on the
   * resolved address at connect time; `true` allows them all (development, the tests' receiver),
   * RUN_CALLBACK_ALLOWED_CIDRS (comma-separated, `10.1.0.0/16,fd00::/8`) allows just those ranges.
   */
  RUN_CALLBACK_ALLOW_PRIVATE: booleanFlag.default(false),
  RUN_CALLBACK_ALLOWED_CIDRS: z.string().default(''),
  /** A failed callback is retried after this, then twice as long each time, at most the maximum. */
  RUN_CALLBACK_RETRY_BASE_SECONDS: z.coerce.number().min(0.1).default(LIMITS.runCallbacks.retryBaseSeconds),
  RUN_CALLBACK_RETRY_MAX_SECONDS: z.coerce.number().min(0.1).default(LIMITS.runCallbacks.retryMaxSeconds),
  /**
   * Connectors (issue 41) meet the run callbacks' address guard at connect time; these ranges are
   * allowed although private (`10.1.0.0/16`; the tests' `127.0.0.1/32`). 169.254.169.254 never is.
   */
  CONNECTOR_ALLOWED_CIDRS: z.string().default(''),

  /**
   * Graph versions (issue 31) are kept this many days, then purged daily; `as_of` and the diff
   * answer 422 before the horizon this sets.
   */
  VERSION_RETENTION_DAYS: z.coerce.number().int().min(1).max(36500).default(VERSION_RETENTION.defaultDays),
});

export type Config = Omit<z.infer<typeof EnvSchema>, 'WEFT_ENCRYPTION_KEY'> & {
  /** 32 or more bytes. */
  WEFT_ENCRYPTION_KEY: Buffer;
};

export class ConfigError extends Error {}

/** Why a secret is unfit for production, or undefined when it is fit. */
function weakSecret(value: string | Buffer): string | undefined {
  if (typeof value === 'string' && PLACEHOLDER.test(value)) return 'is a placeholder';
  const bits = estimatedEntropyBits(typeof value === 'string' ? value : [...value]);
  if (bits < MIN_SECRET_BITS)
    return `has too little entropy (about ${Math.floor(bits)} bits, ${MIN_SECRET_BITS} needed)`;
  if (isPatterned(value)) return 'is a sequence or a repeated pattern';
  return undefined;
}

/** Production refuses development defaults, placeholders and guessable secrets, all reported at once. */
function productionProblems(env: z.infer<typeof EnvSchema>): string[] {
  const problems: string[] = [];
  const generate = 'generate one with `openssl rand -base64 32`';
  if (env.JWT_SECRET === DEV_JWT_SECRET) problems.push(`JWT_SECRET must be set in production (${generate})`);
  else {
    const weak = weakSecret(env.JWT_SECRET);
    if (weak) problems.push(`JWT_SECRET ${weak}; ${generate}`);
  }
  if (env.TEMPORAL_UI_DEV_CODEC) problems.push('TEMPORAL_UI_DEV_CODEC decodes without a credential: development only');
  // /metrics reports every workspace's activity: private unless the operator says otherwise, out loud.
  if (env.METRICS_TOKEN) {
    const weak = weakSecret(env.METRICS_TOKEN);
    if (weak) problems.push(`METRICS_TOKEN ${weak}; ${generate}`);
  } else if (!env.METRICS_PUBLIC) {
    problems.push(
      `METRICS_TOKEN must be set in production (${generate}), or METRICS_PUBLIC=true when the network fences /metrics`,
    );
  }
  // Unset, OAuth's metadata would name whatever Host a request sent (review NL-3).
  if (!env.PUBLIC_URL) {
    problems.push(
      'PUBLIC_URL must be set in production: the origin clients reach the API at (https://weft.example.com)',
    );
  }
  if (!env.WEFT_ENCRYPTION_KEY) problems.push(`WEFT_ENCRYPTION_KEY must be set in production (${generate})`);
  else {
    const weak = weakSecret(env.WEFT_ENCRYPTION_KEY);
    if (weak) problems.push(`WEFT_ENCRYPTION_KEY ${weak}; ${generate}`);
    if (decodeKey(env.JWT_SECRET)?.equals(env.WEFT_ENCRYPTION_KEY)) {
      problems.push('WEFT_ENCRYPTION_KEY must be a secret of its own, not JWT_SECRET');
    }
  }
  return problems;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable counts as unset (docker compose passes `${OPENAI_BASE_URL:-}` as '').
  const set = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = EnvSchema.safeParse(set);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid environment:\n${lines.join('\n')}`);
  }
  const config = parsed.data;
  if (config.NODE_ENV === 'production') {
    const problems = productionProblems(config);
    if (problems.length > 0) throw new ConfigError(`Invalid environment:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  }
  return {
    ...config,
    // Outside production a missing key is derived from JWT_SECRET, so development needs no set-up.
    WEFT_ENCRYPTION_KEY:
      config.WEFT_ENCRYPTION_KEY ?? createHash('sha256').update(`weft-encryption-key:${config.JWT_SECRET}`).digest(),
  };
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
    // Benchmarks measure throughput with one credential and one sender, not the rate limiters.
    ...(suffix === '_bench'
      ? { RATE_LIMIT_RPS: '0', WEBHOOK_INTAKE_PER_SOURCE: '0', WEBHOOK_INTAKE_PER_SLUG: '0' }
      : {}),
    ...env,
    NODE_ENV: 'test',
    DATABASE_URL: rename(base.DATABASE_URL),
    DATABASE_OWNER_URL: rename(base.DATABASE_OWNER_URL),
    ...(base.DATABASE_REPLICA_URL ? { DATABASE_REPLICA_URL: rename(base.DATABASE_REPLICA_URL) } : {}),
  };
}

export const withTestDatabase = (env: NodeJS.ProcessEnv) => withDatabaseSuffix(env, '_test');

/** Whether answers (routes' responses, capabilities' outputs) are checked against their schemas. */
export const checksAnswers = (config: Pick<Config, 'RESPONSE_VALIDATION' | 'NODE_ENV'>): boolean =>
  config.RESPONSE_VALIDATION ?? config.NODE_ENV !== 'production';
