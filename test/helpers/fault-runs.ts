import { createHmac, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { DataSource } from 'typeorm';
import type { BootstrapResult } from '../../src/tenancy/service';
import { FINISHED } from './runs';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface Answer {
  status: number;
  body: any;
  retryAfter: string | null;
}

/**
 * HTTP to a Weft process under faults, recording every 5xx: a 503 with Retry-After is the only
 * answer allowed while something is down. A refused connection (the API killed) is status 0.
 */
export class FaultHttp {
  readonly fiveHundreds: { status: number; path: string; retryAfter: string | null }[] = [];
  unreachable = 0;

  constructor(public baseUrl: string) {}

  async send(token: string | undefined, method: string, path: string, body?: unknown, raw?: RawBody): Promise<Answer> {
    const headers: Record<string, string> = { ...raw?.headers };
    if (token) headers.authorization = `Bearer ${token}`;
    let payload: string | undefined = raw?.text;
    if (body !== undefined) {
      payload = JSON.stringify(body);
      headers['content-type'] = 'application/json';
    }
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers,
        body: payload,
        signal: AbortSignal.timeout(60_000),
      });
    } catch {
      this.unreachable++;
      return { status: 0, body: undefined, retryAfter: null };
    }
    const text = await response.text();
    const retryAfter = response.headers.get('retry-after');
    if (response.status >= 500) this.fiveHundreds.push({ status: response.status, path, retryAfter });
    let parsed: unknown = text;
    if ((response.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: response.status, body: parsed, retryAfter };
  }

  /** 5xx answers other than a 503 with Retry-After. */
  forbidden5xx() {
    return this.fiveHundreds.filter((answer) => !(answer.status === 503 && answer.retryAfter));
  }

  /**
   * Sends until the answer is not a 503 or an unreachable API, as a well-behaved client does
   * (Retry-After honoured); `until` bounds it.
   */
  async retrying(
    token: string | undefined,
    method: string,
    path: string,
    body?: unknown,
    raw?: () => RawBody,
    until = Date.now() + 15 * 60_000,
  ): Promise<Answer> {
    for (;;) {
      const answer = await this.send(token, method, path, body, raw?.());
      if ((answer.status !== 503 && answer.status !== 0) || Date.now() > until) return answer;
      await sleep(answer.retryAfter ? Math.min(Number(answer.retryAfter), 5) * 1000 : 1000);
    }
  }
}

interface RawBody {
  text: string;
  headers: Record<string, string>;
}

/** A tenant of the load: an API key that dispatches, and a member (a person) who resolves approvals. */
export interface LoadTenant {
  owner: BootstrapResult;
  reviewer: BootstrapResult;
  credits: number;
  /** `slug` as created (with its random suffix); `tag` the name its runs give their sessions. */
  trigger?: { slug: string; tag: string; secret: string };
}

export interface LoadRun {
  executionId: string;
  tenant: LoadTenant;
  /** Names the run's side effect (an agent session `<tag>`; a trigger's runs share its slug), so doubles count. */
  tag: string;
  approval: boolean;
  via: 'http' | 'webhook';
}

/**
 * Three steps: a charged search (its charge checked), an agent session named after the run (the
 * side effect counted), optionally behind an approval, and a free read.
 */
export function loadPlan(tag: string, approval: boolean) {
  return {
    agent: 'playbook',
    input: {
      steps: [
        { tool: 'ontology.search', input: { query: 'fault' } },
        { tool: 'agent.start_session', input: { name: tag }, requires_approval: approval },
        { tool: 'billing.credits_balance' },
      ],
    },
  };
}

export async function newLoadTenant(
  provisioning: { bootstrap(options: { credits?: number; workspaceId?: string }): Promise<BootstrapResult> },
  credits: number,
): Promise<LoadTenant> {
  const owner = await provisioning.bootstrap({ credits });
  const reviewer = await provisioning.bootstrap({ workspaceId: owner.workspace_id });
  return { owner, reviewer, credits };
}

/** POST /v1/runs (with an idempotency key, so a retried dispatch is one run); 202 expected. */
export async function dispatchRun(http: FaultHttp, tenant: LoadTenant, approval: boolean): Promise<LoadRun> {
  const tag = `fault-${randomUUID()}`;
  const answer = await http.retrying(tenant.owner.api_key, 'POST', '/v1/runs', {
    ...loadPlan(tag, approval),
    idempotency_key: tag,
  });
  if (answer.status !== 202) throw new Error(`dispatch answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return { executionId: answer.body.execution_id, tenant, tag, approval, via: 'http' };
}

/** A trigger whose run is the load plan without approval; every run it starts names its session by the slug. */
export async function createTrigger(http: FaultHttp, tenant: LoadTenant): Promise<void> {
  const slug = `fault-${randomUUID().slice(0, 12)}`;
  const plan = loadPlan(slug, false);
  const answer = await http.retrying(tenant.owner.api_key, 'POST', '/v1/triggers', { slug, run: plan });
  if (answer.status !== 201)
    throw new Error(`trigger creation answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  tenant.trigger = { slug: answer.body.slug, tag: slug, secret: answer.body.secret };
}

/** A signed webhook delivery: 202 with the run's execution id expected. */
export async function deliverWebhook(http: FaultHttp, tenant: LoadTenant): Promise<LoadRun> {
  const trigger = tenant.trigger;
  if (!trigger) throw new Error('createTrigger first');
  const text = JSON.stringify({ delivery: randomUUID() });
  const signed = () => {
    const t = Math.floor(Date.now() / 1000);
    const digest = createHmac('sha256', trigger.secret).update(`${t}.`).update(text).digest('hex');
    return { text, headers: { 'content-type': 'application/json', 'x-service-signature': `t=${t},v1=${digest}` } };
  };
  const answer = await http.retrying(undefined, 'POST', `/v1/triggers/webhook/${trigger.slug}`, undefined, signed);
  if (answer.status !== 202 || !answer.body?.execution_id) {
    throw new Error(`webhook answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  }
  return { executionId: answer.body.execution_id, tenant, tag: trigger.tag, approval: false, via: 'webhook' };
}

/** The run as GET /v1/runs/{id} shows it (retried through 503s). */
export const readRun = async (http: FaultHttp, run: LoadRun) =>
  http.retrying(run.tenant.owner.api_key, 'GET', `/v1/runs/${run.executionId}`);

/** Waits until the run's approval is pending and resolves it APPROVED as the reviewer; 200 expected. */
export async function approve(http: FaultHttp, run: LoadRun, until: number): Promise<Answer> {
  for (;;) {
    const read = await readRun(http, run);
    const pending = read.body?.approvals?.find((approval: any) => approval.status === 'pending');
    if (read.status === 200 && read.body.status === 'AWAITING_APPROVAL' && pending) {
      return http.retrying(run.tenant.reviewer.user_jwt, 'POST', `/v1/approvals/${pending.approval_id}/resolve`, {
        decision: 'APPROVED',
      });
    }
    if (Date.now() > until) throw new Error(`run ${run.executionId} never awaited approval (${read.body?.status})`);
    await sleep(500);
  }
}

/** Polls every run until each is finished or `until` passes; answers the last read of each. */
export async function waitTerminal(http: FaultHttp, runs: LoadRun[], until: number): Promise<Map<string, any>> {
  const last = new Map<string, any>();
  let open = [...runs];
  while (open.length > 0) {
    // A few reads at a time: a load of hundreds must not become the load the API is judged under.
    for (let at = 0; at < open.length; at += 20) {
      const slice = open.slice(at, at + 20);
      const reads = await Promise.all(slice.map(async (run) => [run, await readRun(http, run)] as const));
      for (const [run, read] of reads) if (read.status === 200) last.set(run.executionId, read.body);
    }
    open = open.filter((run) => !FINISHED.includes(last.get(run.executionId)?.status));
    if (open.length === 0 || Date.now() > until) break;
    await sleep(1000);
  }
  return last;
}

export interface LoadFindings {
  runs: number;
  /** Not SUCCEEDED at the deadline: never found, stuck (`QUEUED`…) or failed/cancelled. */
  notSucceeded: { executionId: string; status: string; error?: unknown }[];
  /** Tags whose side effect (the named session) happened more often than their succeeded runs. */
  stepsDoubled: string[];
  /** Tags with fewer sessions than succeeded runs. */
  stepsMissing: string[];
  /** Tenants whose credits charged differ from those owed (one per succeeded search step). */
  chargeErrors: { tenant: string; charged: number; owed: number }[];
  invalidChains: string[];
}

/**
 * What every fault scenario asserts: no run lost or stuck, no side effect or charge doubled or
 * missing, every audit chain valid, and no 5xx but a 503 with Retry-After.
 */
export function expectNothingLostOrDoubled(findings: LoadFindings, http: FaultHttp) {
  expect(findings.notSucceeded, 'runs not SUCCEEDED').to.deep.equal([]);
  expect(findings.stepsDoubled, 'side effects doubled').to.deep.equal([]);
  expect(findings.stepsMissing, 'side effects missing').to.deep.equal([]);
  expect(findings.chargeErrors, 'charges doubled or missing').to.deep.equal([]);
  expect(findings.invalidChains, 'invalid audit chains').to.deep.equal([]);
  expect(http.forbidden5xx(), '5xx other than a 503 with Retry-After').to.deep.equal([]);
}

/** What the load left: lost, doubled, mischarged or falsified runs (every list empty when sound). */
export async function inspectRuns(
  http: FaultHttp,
  owner: DataSource,
  runs: LoadRun[],
  until: number,
): Promise<LoadFindings> {
  const last = await waitTerminal(http, runs, until);
  const findings: LoadFindings = {
    runs: runs.length,
    notSucceeded: [],
    stepsDoubled: [],
    stepsMissing: [],
    chargeErrors: [],
    invalidChains: [],
  };
  const owed = new Map<LoadTenant, number>();
  // Sessions each tag should have: one per succeeded run that carries it.
  const sessionsDue = new Map<string, { tenant: LoadTenant; due: number; runs: string[] }>();
  for (const run of runs) {
    const body = last.get(run.executionId);
    const status = body?.status ?? 'NOT FOUND';
    const group = sessionsDue.get(run.tag) ?? { tenant: run.tenant, due: 0, runs: [] };
    sessionsDue.set(run.tag, group);
    group.runs.push(run.executionId);
    if (status !== 'SUCCEEDED')
      findings.notSucceeded.push({ executionId: run.executionId, status, error: body?.error });
    else group.due++;
    // One credit per search step that succeeded, whatever became of its run.
    const searched = (body?.steps ?? []).filter(
      (step: any) => step.tool === 'ontology.search' && step.status === 'SUCCEEDED',
    ).length;
    owed.set(run.tenant, (owed.get(run.tenant) ?? 0) + searched);
    const audit = await http.retrying(run.tenant.owner.api_key, 'GET', `/v1/runs/${run.executionId}/audit`);
    if (audit.status !== 200 || audit.body.valid !== true) findings.invalidChains.push(run.executionId);
  }
  for (const [tag, group] of sessionsDue) {
    const [{ n }] = await owner.query(
      `SELECT count(*)::int AS n FROM agent_sessions WHERE workspace_id = $1 AND name = $2`,
      [group.tenant.owner.workspace_id, tag],
    );
    if (n > group.due) findings.stepsDoubled.push(`${tag}: ${n} sessions for ${group.due} succeeded run(s)`);
    if (n < group.due) findings.stepsMissing.push(`${tag}: ${n} sessions for ${group.due} succeeded run(s)`);
  }
  for (const tenant of new Set(runs.map((run) => run.tenant))) {
    const [{ balance }] = await owner.query(`SELECT credit_balance AS balance FROM tenants WHERE id = $1`, [
      tenant.owner.tenant_id,
    ]);
    const charged = tenant.credits - Number(balance);
    const due = owed.get(tenant) ?? 0;
    if (charged !== due) findings.chargeErrors.push({ tenant: tenant.owner.tenant_id, charged, owed: due });
  }
  return findings;
}

/** One line per kind of finding, for the test's output and the load script's report. */
export function describeFindings(findings: LoadFindings, http: FaultHttp): string {
  const bad = http.forbidden5xx();
  return [
    `runs: ${findings.runs}, not succeeded: ${findings.notSucceeded.length}`,
    ...findings.notSucceeded
      .slice(0, 5)
      .map((run) => `  ${run.executionId}: ${run.status} ${JSON.stringify(run.error ?? '')}`),
    `steps doubled: ${findings.stepsDoubled.length}, side effects missing: ${findings.stepsMissing.length}`,
    `charges off: ${findings.chargeErrors.length} tenant(s) ${JSON.stringify(findings.chargeErrors.slice(0, 3))}`,
    `invalid audit chains: ${findings.invalidChains.length}`,
    `5xx answered: ${http.fiveHundreds.length} (not a 503 with Retry-After: ${bad.length}` +
      `${bad.length ? ` ${JSON.stringify(bad.slice(0, 3))}` : ''}), unreachable: ${http.unreachable}`,
  ].join('\n');
}
