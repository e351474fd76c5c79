import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { UnauthenticatedError } from '../errors';
import type { CredentialProof } from './credential-proof';
import { takeCredentialProof } from './credential-proof';
import type { ReadPosition, Standby } from './standby';
import { fromStandbyOr } from './standby';

/**
 * Who a unit of work runs as. Row-level security policies read these settings; anything left
 * unset fails closed (the policy compares with NULL and no row matches).
 */
export interface Scope {
  workspaceId?: string;
  userId?: string;
  /** Set only while authenticating: lets exactly the credential with this hash be read. */
  keyHash?: string;
  /** Who changes the graph in this unit of work: the version triggers record it (issue 31). */
  actor?: ChangeContext;
  /**
   * Reads only: every statement sees the database as of the first one (REPEATABLE READ), so a view
   * composed of several reads (a run, its steps and its approvals) never mixes two moments.
   */
  snapshot?: boolean;
  /**
   * The credential lookup this request still owes (credential-proof.ts): the first scoped read in
   * this scope carries it in its own statement. Set by scopeOf from the request's principal.
   */
  proof?: CredentialProof;
  /**
   * Transaction-local settings the unit of work's statements need (an index's knobs, such as
   * `hnsw.ef_search`, or `synchronous_commit`), set in the BEGIN message beside the scope instead of a
   * round trip of their own.
   */
  settings?: Readonly<Record<string, string>>;
  /**
   * Reads only (an open event stream's): the credential the reads answer to. Each read checks it in its
   * own statement (`weft_credential_live`, as the scope's user and workspace) and answers only while it
   * stands; otherwise it throws `CredentialLapsed` and reads nothing.
   */
  standing?: StandingCredential;
  /**
   * The request's reads' place (standby.ts): a scoped read or a snapshot may go to the standby when its
   * route allows it; a write records its commit's WAL position here for read-your-writes.
   */
  position?: ReadPosition;
}

/** A credential as `weft_credential_live` checks it: its row id (or a JWT's jti), kind and expiry. */
export interface StandingCredential {
  credentialId: string | null;
  kind: string;
  expiresAt: string | null;
}

/**
 * A scoped read's credential no longer stands (revoked, expired, or its user left the workspace). A
 * stream turns it into its final `error` event; anywhere else it answers what a refused credential does.
 */
export class CredentialLapsed extends UnauthenticatedError {
  constructor() {
    super('Invalid or revoked credential');
  }
}

/**
 * What the graph's version rows record of a change beyond the user (`app.user_id`): the
 * credential, the run, prompt or capability call behind it, and an operation label. Each is a
 * transaction-local setting (`app.actor_*`, `app.change_op`) read by the triggers of
 * migrations/1763780013100-graph-versions.ts; unset ones are recorded as null.
 */
export interface ChangeContext {
  credentialKind?: string;
  credentialId?: string;
  runId?: string;
  promptId?: string;
  /** The capability's name. */
  capability?: string;
  /** The capability call's Idempotency-Key. */
  capabilityCall?: string;
  /** The operation label ('merge', 'unmerge', 'contradiction', …); any writer may set it. */
  op?: string;
}

const CHANGE_SETTINGS: Record<keyof ChangeContext, string> = {
  credentialKind: 'app.actor_kind',
  credentialId: 'app.actor_credential',
  runId: 'app.actor_run',
  promptId: 'app.actor_prompt',
  capability: 'app.actor_capability',
  capabilityCall: 'app.actor_call',
  op: 'app.change_op',
};

const changeEntries = (context: ChangeContext | undefined) =>
  Object.entries(context ?? {}).filter((entry): entry is [keyof ChangeContext, string] => entry[1] !== undefined);

/**
 * Sets (or, with '', clears) parts of the change context inside the caller's transaction: later
 * writes of nodes and edges in it carry them. One statement.
 */
export async function setChangeContext(m: EntityManager, context: ChangeContext): Promise<void> {
  const entries = changeEntries(context);
  if (entries.length === 0) return;
  await m.query(
    `SELECT ${entries.map((_, at) => `set_config($${2 * at + 1}, $${2 * at + 2}, true)`).join(', ')}`,
    entries.flatMap(([key, value]) => [CHANGE_SETTINGS[key], value]),
  );
}

export type UnitOfWork = <T>(scope: Scope, work: (manager: EntityManager) => Promise<T>) => Promise<T>;

// Work a transaction owes at its end, by key, in the order first asked for.
const owed = new WeakMap<EntityManager, Map<string, () => Promise<void>>>();

/**
 * Asks the unit of work whose manager `m` is to run `work` last, after the caller's own work and right
 * before it commits: once per `key`, however many writes ask (the first one's `work` runs). For a lock
 * that must be the last one its transaction takes (the runs' priority gate, src/runs/priority-gate.ts).
 */
export function beforeCommit(m: EntityManager, key: string, work: () => Promise<void>): void {
  const list = owed.get(m) ?? new Map<string, () => Promise<void>>();
  owed.set(m, list);
  if (!list.has(key)) list.set(key, work);
}

/** Runs what the transaction owes; what one of them asks for in turn runs too. */
async function settleOwed(m: EntityManager): Promise<void> {
  const list = owed.get(m);
  if (!list) return;
  for (const [key, work] of list) {
    await work();
    list.delete(key);
  }
  owed.delete(m);
}

/**
 * Runs `work` in one transaction whose scope is set with `set_config(..., true)`: transaction-local,
 * and gone when the pooled connection is reused. Every repository a service uses must come from
 * the `manager` passed in. BEGIN and the scope go to the server as one round trip (see beginScoped).
 */
export function createUnitOfWork(dataSource: DataSource, standby?: Standby): UnitOfWork {
  const inTransaction = async <T>(
    source: DataSource,
    scope: Scope,
    work: (manager: EntityManager) => Promise<T>,
  ): Promise<T> => {
    const runner = source.createQueryRunner();
    try {
      await beginScoped(runner, scope);
      // A request that started from a remembered principal writes nothing before its credential is
      // proven live as that very principal (credential-proof.ts): the proof rode in the BEGIN above.
      if (scope.proof) await scope.proof.confirmed();
      const result = await work(runner.manager);
      // `commitWith` may have committed it with the work's last statement (it refuses when work is owed).
      if (runner.isTransactionActive) {
        await settleOwed(runner.manager);
        await runner.commitTransaction();
      }
      // Read-your-writes (standby.ts): the request's next reads must see this commit.
      if (standby && scope.position && !scope.snapshot) {
        const [row] = (await runner.query('SELECT pg_current_wal_lsn()::text AS lsn')) as { lsn: string }[];
        scope.position.wrote = scope.position.after = row!.lsn;
      }
      return result;
    } catch (error) {
      owed.delete(runner.manager);
      // The original error wins, even when the rollback fails too (as TypeORM's own transaction does).
      if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => {});
      throw error;
    } finally {
      await runner.release();
    }
  };
  return (scope, work) =>
    scope.snapshot && standby
      ? // A snapshot only reads: the standby may serve it. The credential's proof stays the primary's.
        fromStandbyOr(standby, scope.position, (onStandby) =>
          onStandby
            ? inTransaction(standby.dataSource, { ...scope, proof: undefined }, work)
            : inTransaction(dataSource, scope, work),
        )
      : inTransaction(dataSource, scope, work);
}

// Uuids and hex digests: the only characters a scope value may have to be written into the statement.
const LITERAL_SAFE = /^[0-9a-fA-F-]{0,128}$/;
// The change context's values written in as literals: names, kinds and keys without quotes or backslashes.
const CONTEXT_LITERAL_SAFE = /^[0-9A-Za-z_.:@ -]{0,200}$/;
// A setting's name as Postgres spells a (custom) parameter, `hnsw.ef_search`; never one of the scope's own (`app.`).
const SETTING_NAME = /^(?!app\.)[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$/;

interface PgClient {
  query(sql: string, params?: unknown[]): Promise<unknown>;
}

/**
 * Opens the transaction and sets the scope in one round trip: `BEGIN; SELECT set_config(...)` as one
 * simple-protocol message. A message with two statements cannot bind parameters, so the values are
 * written in as literals, and only values made of hex digits and dashes (every uuid and key hash)
 * are: anything else (never seen from our callers) takes the old way, BEGIN and then the scope bound as
 * parameters. The runner is told its transaction is open, exactly as its own startTransaction leaves
 * it, so entity saves use it and commit/rollback and nested savepoints behave as before. The
 * credential lookup a request still owes (credential-proof.ts) goes in the same message, after BEGIN.
 */
async function beginScoped(runner: QueryRunner, scope: Scope): Promise<void> {
  const values = [scope.workspaceId ?? '', scope.userId ?? '', scope.keyHash ?? ''];
  const context = changeEntries(scope.actor);
  const begin = scope.snapshot ? 'BEGIN ISOLATION LEVEL REPEATABLE READ' : 'BEGIN';
  const client = (await runner.connect()) as PgClient;
  Object.assign(runner, { isTransactionActive: true, transactionDepth: 1 });
  const proof = takeCredentialProof(scope.proof);
  try {
    const literal = proof && lookupWithLiterals(proof);
    const settings = Object.entries(scope.settings ?? {});
    const unnamed = settings.find(([name]) => !SETTING_NAME.test(name));
    if (unnamed) throw new Error(`not a setting a unit of work may set: ${unnamed[0]}`);
    if (
      values.every((value) => LITERAL_SAFE.test(value)) &&
      context.every(([, value]) => CONTEXT_LITERAL_SAFE.test(value)) &&
      settings.every(([, value]) => CONTEXT_LITERAL_SAFE.test(value)) &&
      (!proof || literal)
    ) {
      const [workspaceId, userId, keyHash] = values.map((value) => `'${value}'`);
      const more = [...context.map(([key, value]) => [CHANGE_SETTINGS[key], value] as const), ...settings]
        .map(([name, value]) => `, set_config('${name}', '${value}', true)`)
        .join('');
      // The credential's lookup rides in the same message, before the scope: the lookup sets settings of its
      // own (the credential's user and hash), which the scope then sets as this unit of work needs them.
      const results = await client.query(
        `${begin}; ${literal ? `${literal}; ` : ''}SELECT set_config('app.workspace_id', ${workspaceId}, true), ` +
          `set_config('app.user_id', ${userId}, true), set_config('app.key_hash', ${keyHash}, true)${more}`,
      );
      if (proof) proof.settle((results as { rows: unknown[] }[])[1]!.rows[0]);
      return;
    }
    await client.query(begin);
    if (proof) proof.settle(((await client.query(proof.sql, [...proof.params])) as { rows: unknown[] }).rows[0]);
    await client.query(
      `SELECT set_config('app.workspace_id', $1, true), set_config('app.user_id', $2, true),
       set_config('app.key_hash', $3, true)`,
      values,
    );
    await setChangeContext(runner.manager, scope.actor ?? {});
    for (const [name, value] of settings) await client.query(`SELECT set_config($1, $2, true)`, [name, value]);
  } catch (error) {
    // The transaction failed to open, not the credential: the proof is still owed.
    if (proof) proof.sent = false;
    throw error;
  }
}

// A bound value written into a statement as a literal (`commitWith`): numbers, booleans, null, strings
// without quotes or backslashes, and lists of uuids or such names (a Postgres array literal).
const ARRAY_ELEMENT_SAFE = /^[0-9A-Za-z_.:-]{1,200}$/;
const VALUE_LITERAL_SAFE = /^[0-9A-Za-z_.:@# -]{0,200}$/;

function asLiteral(value: unknown): string | undefined {
  if (value === null || value === undefined) return 'NULL';
  // In parentheses, so `-$1` never becomes a comment (`--1`).
  if (typeof value === 'number') return Number.isFinite(value) ? `(${value})` : undefined;
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (typeof value === 'string') return VALUE_LITERAL_SAFE.test(value) ? `'${value}'` : undefined;
  if (Array.isArray(value) && value.every((item) => typeof item === 'string' && ARRAY_ELEMENT_SAFE.test(item))) {
    return `'{${value.join(',')}}'`;
  }
  return undefined;
}

/**
 * `sql` with `$n` replaced by its value as a literal (`literal`: how one is written, undefined when it
 * cannot be), or undefined when one value cannot be written so.
 */
function withLiterals(
  sql: string,
  params: readonly unknown[],
  literal: (value: unknown) => string | undefined = asLiteral,
): string | undefined {
  const literals = params.map(literal);
  if (literals.some((literal) => literal === undefined)) return undefined;
  let complete = true;
  const written = sql.replace(/\$(\d+)/g, (_, at: string) => {
    const literal = literals[Number(at) - 1];
    if (literal === undefined) complete = false;
    return literal ?? '';
  });
  return complete ? written : undefined;
}

/**
 * The unit of work's last statement and its COMMIT as one message (simple protocol, the values written in
 * as literals when `withLiterals` can; else the statement and then COMMIT, two round trips). For a statement
 * that takes a lock others queue for, such as a tenant's balance: it is then held for the statement and the
 * commit's flush, and no round trip to this process and back. `sql` holds no `$` but its parameters' (`$1`
 * …). Nothing may run in the transaction after it; the unit of work then does not commit again. An error
 * in the statement stops the message before COMMIT, and the unit of work rolls back as for any error.
 */
export async function commitWith<Row>(m: EntityManager, sql: string, params: readonly unknown[] = []): Promise<Row[]> {
  const runner = m.queryRunner;
  if (!runner || runner.isTransactionActive === false) throw new Error('commitWith needs an open unit of work');
  // What `beforeCommit` asked for must take the transaction's last lock: it cannot come after this one.
  if (owed.get(m)?.size) throw new Error('commitWith cannot end a unit of work that owes work before its commit');
  const client = (await runner.connect()) as PgClient;
  const inline = withLiterals(sql, params);
  let rows: unknown[];
  if (inline) {
    const [result] = (await client.query(`${inline}; COMMIT`)) as { rows: unknown[] }[];
    rows = result!.rows;
  } else {
    rows = ((await client.query(sql, [...params])) as { rows: unknown[] }).rows;
    await client.query('COMMIT');
  }
  Object.assign(runner, { isTransactionActive: false, transactionDepth: 0 });
  return rows as Row[];
}

/** The credential's lookup with its parameters written in, when every one is a uuid, a hex digest or null. */
const lookupWithLiterals = (proof: CredentialProof) =>
  withLiterals(proof.sql, proof.params, (value) =>
    value === null ? 'NULL' : typeof value === 'string' && LITERAL_SAFE.test(value) ? `'${value}'` : undefined,
  );

/**
 * One statement, one round trip: `weft_scoped_read` sets the scope and runs `sql` under RLS in the
 * same statement (migrations/1763780002100-scoped-read.ts). For hot single-query reads, where the
 * unit of work's BEGIN, set_config and COMMIT would triple the cost. `sql` is Weft's own text;
 * `params` are bound ($1 … $8, as text: cast them in the query). Rows come back as JSON objects
 * (timestamps as ISO strings).
 */
export type ScopedRead = <T>(
  scope: Scope,
  sql: string,
  params?: readonly (string | number | boolean | null)[],
) => Promise<T[]>;

interface PgPool {
  query(sql: string, params: unknown[]): Promise<{ rows: unknown[] }>;
}

// TypeORM's postgres driver keeps its pg Pool as `master`; going to it directly skips the
// query-runner bookkeeping on the hottest paths.
const poolOf = (dataSource: DataSource) => (dataSource.driver as unknown as { master: PgPool }).master;

/**
 * One statement on a pooled connection, outside any transaction and with no scope set: only for
 * statements that are their own scope (a definer function, or a function that sets
 * `app.workspace_id` itself, as the webhook intake's record does).
 */
export type Statement = <T>(sql: string, params?: readonly unknown[]) => Promise<T[]>;

export function createStatement(dataSource: DataSource): Statement {
  const pool = poolOf(dataSource);
  return async <T>(sql: string, params: readonly unknown[] = []) => (await pool.query(sql, [...params])).rows as T[];
}

export function createScopedRead(dataSource: DataSource, standby?: Standby): ScopedRead {
  const pool = poolOf(dataSource);
  const replica = standby && poolOf(standby.dataSource);
  const plain = async <T>(on: PgPool, scoped: unknown[]) => {
    const { rows } = await on.query(`SELECT r FROM weft_scoped_read($1, $2, $3, $4) r`, scoped);
    return (rows as { r: unknown }[]).map((row) => row.r as T);
  };
  return async <T>(scope: Scope, sql: string, params: readonly (string | number | boolean | null)[] = []) => {
    if (params.length > 8) throw new Error('weft_scoped_read binds at most 8 parameters');
    const scoped = [scope.workspaceId ?? null, scope.userId ?? null, sql, params.map(asText)];
    // An open stream's credential is checked where it is revoked, the primary, as every credential lookup.
    if (scope.standing) return readStanding<T>(pool, scope.standing, scoped);
    // On the standby the read goes without the request's credential lookup, which the router then
    // sends to the primary alone before it answers (credential-proof.ts).
    if (replica && scope.position?.standby) {
      return fromStandbyOr(standby, scope.position, (onStandby) =>
        onStandby ? plain<T>(replica, scoped) : readOnPrimary<T>(pool, scope, scoped),
      );
    }
    return readOnPrimary<T>(pool, scope, scoped);
  };
  async function readOnPrimary<T>(on: PgPool, scope: Scope, scoped: unknown[]): Promise<T[]> {
    const proof = takeCredentialProof(scope.proof);
    return proof ? readProving<T>(on, proof, scoped) : plain<T>(on, scoped);
  }
}

const asText = (value: string | number | boolean | null) => (value === null ? null : String(value));

/**
 * The scoped read after the credential's check, in one statement: CASE evaluates the check first and
 * the read only when it holds, so nothing is read for a credential that no longer stands. The check
 * acts as the scope's user and hands the statement back before the read sets its own scope.
 */
async function readStanding<T>(pool: PgPool, standing: StandingCredential, scoped: unknown[]): Promise<T[]> {
  const { rows } = await pool.query(
    `SELECT CASE WHEN weft_credential_live($5::uuid, $1::uuid, $2::uuid, $6::text, $7::timestamptz)
       THEN (SELECT coalesce(jsonb_agg(t.r ORDER BY t.n), '[]'::jsonb)
               FROM weft_scoped_read($1, $2, $3, $4) WITH ORDINALITY AS t(r, n)) END AS rows`,
    [...scoped, standing.credentialId, standing.kind, standing.expiresAt],
  );
  const answer = (rows[0] as { rows: T[] | null } | undefined)?.rows;
  if (!answer) throw new CredentialLapsed();
  return answer;
}

/**
 * The scoped read and the request's credential lookup (credential-proof.ts) in one statement: the
 * read's rows as one JSON array in their order, and the lookup's row. The read goes first, so its
 * scope is only its own; the lookup's answer does not depend on what the read set (it names its
 * credential and user). The rows are returned only once the lookup found the credential live.
 */
async function readProving<T>(pool: PgPool, proof: CredentialProof, scoped: unknown[]): Promise<T[]> {
  const lookup = proof.sql.replace(/\$(\d+)/g, (_, at: string) => `$${Number(at) + scoped.length}`);
  let rows: unknown[];
  try {
    const result = await pool.query(
      `SELECT (SELECT coalesce(jsonb_agg(t.r ORDER BY t.n), '[]'::jsonb)
                 FROM weft_scoped_read($1, $2, $3, $4) WITH ORDINALITY AS t(r, n)) AS rows,
              (SELECT to_jsonb(a) FROM (${lookup}) a LIMIT 1) AS credential`,
      [...scoped, ...proof.params],
    );
    const [row] = result.rows as { rows: T[]; credential: unknown }[];
    proof.settle(row!.credential ?? undefined);
    rows = row!.rows;
  } catch (error) {
    // The read failed, not the credential: the proof is still owed, by a later read or alone.
    proof.sent = false;
    throw error;
  }
  await proof.verdict;
  return rows as T[];
}
