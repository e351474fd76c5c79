/**
 * `npm run bench -- standby [--seconds 10] [--clients 8] [--write-rate 20] [--nodes 5000] [--rounds 2]
 *   [--own-every 4] [--pool 10]`
 *
 * The standby's effect on graph reads under a write load (issue 44 item 5). The machine's streaming standby
 * (scripts/standby.sh, made if missing, stopped again at the end if it was not running) and two API processes
 * on the bench database: one with DATABASE_REPLICA_URL (its read routes read the standby), one without (the
 * primary only, the anchor). A power-law graph of `--nodes` nodes; per phase, `--clients` HTTP clients read
 * GET node, graph_neighborhood (1 hop) and the node list of random nodes while one writer creates nodes at
 * `--write-rate` per second through the same API. Every `--own-every`-th read is the writer's latest node
 * with the `Weft-Read-After` position its write answered (what the Weft client sends): read-your-writes, it
 * must always be found. Phases alternate primary/standby over `--rounds` (ABBA), so both meet the same load.
 *
 * Per phase: reads/s, p50/p95, the writes' rate and p95, the replication lag the primary saw
 * (pg_stat_replication.replay_lag and bytes, sampled every 250 ms), where the reads went
 * (weft_db_standby_reads_total: standby, behind = read-your-writes sent to the primary, failed), the own-write
 * reads found, and the CPU of the API, the primary's and the standby's Postgres per read.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { Client } from 'pg';
import type { WeftProcess } from '../test/helpers/weft-process';
import { startApiProcess } from '../test/helpers/weft-process';
import type { CpuUse } from './lib/cpu';
import { cpuWindow, postgresBackends, processesUnder } from './lib/cpu';
import { loadPowerLawGraph } from './lib/graph-data';
import type { Measurement } from './lib/measure';
import { measure, numberOption, percentile } from './lib/measure';
import { bootBenchService } from './lib/servers';

const STANDBY_PORT = Number(process.env.WEFT_STANDBY_PORT ?? 5433);
const SLOT = `weft_standby_${STANDBY_PORT}`;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const superuser = async (port: number) => {
  const client = new Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
  await client.connect();
  return client;
};

async function standbyRunning(): Promise<boolean> {
  try {
    const client = await superuser(STANDBY_PORT);
    try {
      return (await client.query('SELECT pg_is_in_recovery() AS r')).rows[0].r === true;
    } finally {
      await client.end();
    }
  } catch {
    return false;
  }
}

const standbyScript = (command: 'up' | 'down') =>
  execFileSync('bash', ['scripts/standby.sh', command], { stdio: ['ignore', 'ignore', 'inherit'] });

/** Each of Weft's standby read outcomes (src/platform/db/standby.ts), as GET /metrics counts them. */
async function standbyReads(api: WeftProcess): Promise<Record<string, number>> {
  const text = await (await fetch(`${api.baseUrl}/metrics`)).text();
  const counts: Record<string, number> = { standby: 0, behind: 0, failed: 0 };
  for (const match of text.matchAll(/^weft_db_standby_reads_total\{outcome="(\w+)"\} (\d+)/gm)) {
    counts[match[1]!] = Number(match[2]);
  }
  return counts;
}

interface Lag {
  p50: number;
  p95: number;
  max: number;
  maxBytes: number;
}

/** Samples the standby's replay lag as the primary sees it, until `stop`. */
function lagSampler(primary: Client): { stop(): Promise<Lag> } {
  const millis: number[] = [];
  const bytes: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      // A phase that failed ends the connection under the sampler: it stops with it.
      const answer = await primary
        .query(
          `SELECT coalesce(extract(epoch FROM r.replay_lag) * 1000, 0)::float8 AS ms,
                pg_wal_lsn_diff(pg_current_wal_lsn(), r.replay_lsn)::float8 AS bytes
           FROM pg_stat_replication r JOIN pg_replication_slots s ON s.active_pid = r.pid WHERE s.slot_name = $1`,
          [SLOT],
        )
        .catch(() => undefined);
      if (!answer) return;
      const rows = answer.rows;
      if (rows[0]) {
        millis.push(rows[0].ms);
        bytes.push(rows[0].bytes);
      }
      await sleep(250);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      millis.sort((a, b) => a - b);
      return {
        p50: percentile(millis, 50),
        p95: percentile(millis, 95),
        max: millis.at(-1) ?? NaN,
        maxBytes: Math.max(0, ...bytes),
      };
    },
  };
}

/** Creates nodes at `rate` per second (not waiting for one to start the next), keeping the latest and its position. */
function writer(api: WeftProcess, bearer: string, rate: number) {
  const latencies: number[] = [];
  // Without a standby a write answers no position (nothing to wait for): its node is read without one.
  let latest: { id: string; lsn: string | null } | undefined;
  let failures = 0;
  let running = true;
  const inFlight = new Set<Promise<void>>();
  const write = async (i: number) => {
    const t0 = process.hrtime.bigint();
    const response = await fetch(`${api.baseUrl}/v1/ontology/nodes`, {
      method: 'POST',
      headers: { authorization: bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'document', name: `standby bench write ${i}` }),
    });
    const body = (await response.json()) as { id?: string };
    latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
    const lsn = response.headers.get('weft-read-after');
    if (response.status !== 201 || !body.id) failures++;
    else latest = { id: body.id, lsn };
  };
  const started = Date.now();
  const loop = (async () => {
    for (let i = 0; running; i++) {
      const task = write(i).catch(() => void failures++);
      inFlight.add(task);
      void task.finally(() => inFlight.delete(task));
      await sleep(Math.max(0, started + ((i + 1) * 1000) / rate - Date.now()));
    }
  })();
  return {
    latest: () => latest,
    async stop() {
      running = false;
      await loop;
      await Promise.all(inFlight);
      const seconds = (Date.now() - started) / 1000;
      latencies.sort((a, b) => a - b);
      return { rate: latencies.length / seconds, p95: percentile(latencies, 95), failures };
    },
  };
}

interface Phase {
  reads: 'primary' | 'standby';
  round: number;
  measurement: Measurement;
  writes: { rate: number; p95: number; failures: number };
  lag: Lag;
  served: Record<string, number>;
  /** Reads of the writer's latest node: found, of all, and not found (a broken read-your-writes). */
  own: { found: number; of: number; missing: number };
  cpu: CpuUse;
  /** Reads answered 503 (the pool's acquire timeout). */
  shed: number;
}

export async function run(args: string[]): Promise<void> {
  const seconds = numberOption(args, 'seconds', 10);
  const clients = numberOption(args, 'clients', 8);
  const writeRate = numberOption(args, 'write-rate', 20);
  const nodes = numberOption(args, 'nodes', 5000);
  const rounds = numberOption(args, 'rounds', 2);
  const ownEvery = numberOption(args, 'own-every', 4);
  const poolSize = String(numberOption(args, 'pool', 10));

  const wasRunning = await standbyRunning();
  standbyScript('up');
  const service = await bootBenchService({ queue: 'weft-bench-standby' });
  const primary = await superuser(5432);
  const standby = await superuser(STANDBY_PORT);
  const apis: WeftProcess[] = [];
  const phases: Phase[] = [];
  try {
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(service.env)) if (value !== undefined) env[key] = value;
    Object.assign(env, { DATABASE_POOL_SIZE: poolSize });
    const replica = new URL(env.DATABASE_URL!);
    replica.port = String(STANDBY_PORT);
    const [onPrimary, onStandby] = await Promise.all([
      startApiProcess(env),
      startApiProcess({ ...env, DATABASE_REPLICA_URL: replica.toString() }),
    ]);
    apis.push(onPrimary!, onStandby!);

    const tenant = await service.provisioning.bootstrap({ name: 'weft-bench-standby', credits: 1000 });
    const bearer = `Bearer ${tenant.api_key}`;
    await loadPowerLawGraph(service.owner, tenant.workspace_id, nodes, nodes * 5);
    const ids = (
      await service.owner.query(`SELECT id FROM nodes WHERE workspace_id = $1 ORDER BY random() LIMIT 500`, [
        tenant.workspace_id,
      ])
    ).map((row: { id: string }) => row.id);
    // The standby's own postmaster and its children, to tell its CPU from the primary's.
    const standbyDir = (await standby.query('SHOW data_directory')).rows[0].data_directory as string;
    const standbyMaster = Number(readFileSync(`${standbyDir}/postmaster.pid`, 'utf8').split('\n')[0]);
    const standbyPids = () => processesUnder(standbyMaster);
    // The primary's share: the bench database's backends and the WAL sender feeding the standby.
    const primaryPids = () => postgresBackends([service.database], true);
    await caughtUp(primary, standby);

    const order: ('primary' | 'standby')[] = [];
    for (let round = 0; round < rounds; round++) {
      order.push(...(round % 2 === 0 ? (['primary', 'standby'] as const) : (['standby', 'primary'] as const)));
    }
    for (const [index, reads] of order.entries()) {
      const api = reads === 'standby' ? onStandby! : onPrimary!;
      const get = (path: string, headers: Record<string, string> = {}) =>
        fetch(`${api.baseUrl}${path}`, { headers: { authorization: bearer, ...headers } });
      const own = { found: 0, of: 0, missing: 0 };
      const refused = new Map<number, number>();
      const write = writer(api, bearer, writeRate);
      await sleep(500);
      const lag = lagSampler(primary);
      const servedBefore = await standbyReads(api);
      const window = cpuWindow({
        api: () => [api.child.pid ?? 0],
        primary: primaryPids,
        standby: standbyPids,
        bench: () => [process.pid],
      });
      const read = async (i: number) => {
        const latest = write.latest();
        if (i % ownEvery === 0 && latest) {
          const position: Record<string, string> = latest.lsn ? { 'weft-read-after': latest.lsn } : {};
          const answer = await get(`/v1/ontology/nodes/${latest.id}`, position);
          await answer.arrayBuffer();
          own.of++;
          if (answer.status === 200) own.found++;
          else if (answer.status === 404) own.missing++;
          else if (answer.status === 503) refused.set(503, (refused.get(503) ?? 0) + 1);
          return;
        }
        const id = ids[(i * 7919) % ids.length]!;
        const path = [
          `/v1/ontology/nodes/${id}`,
          `/v1/ontology/graph_neighborhood?node_id=${id}&hops=1`,
          `/v1/ontology/nodes?limit=20&type=${['person', 'project', 'document'][i % 3]}`,
        ][i % 3]!;
        const answer = await get(path);
        const text = await answer.text();
        // A 503 is the pool shedding load on a busy machine (DATABASE_ACQUIRE_TIMEOUT_MS): counted, not fatal.
        if (answer.status !== 200) {
          refused.set(answer.status, (refused.get(answer.status) ?? 0) + 1);
          if (answer.status !== 503) throw new Error(`GET ${path} answered ${answer.status}: ${text}`);
        }
      };
      const measurement = await measure(`reads from the ${reads}`, read, {
        concurrency: clients,
        durationMs: seconds * 1000,
        warmupMs: 500,
      });
      const cpu = window.stop();
      const servedAfter = await standbyReads(api);
      const writes = await write.stop();
      const served = Object.fromEntries(
        Object.keys(servedAfter).map((key) => [key, servedAfter[key]! - (servedBefore[key] ?? 0)]),
      );
      const phase = { reads, round: Math.floor(index / 2) + 1, measurement, writes, lag: await lag.stop() };
      phases.push({ ...phase, served, own, cpu, shed: refused.get(503) ?? 0 });
      console.error(
        `${reads}: ${measurement.rps.toFixed(0)} reads/s, p95 ${measurement.p95.toFixed(0)} ms, ` +
          `writes ${writes.rate.toFixed(1)}/s, lag p95 ${phase.lag.p95.toFixed(0)} ms, own ${own.found}/${own.of}, ` +
          `${refused.get(503) ?? 0} shed (503)`,
      );
      await caughtUp(primary, standby);
    }
  } finally {
    await Promise.all(apis.map((api) => api.kill()));
    await primary.end();
    await standby.end();
    await service.stop();
    if (!wasRunning) standbyScript('down');
  }
  report(phases, { seconds, clients, writeRate, nodes, ownEvery, poolSize });
  if (phases.some((phase) => phase.own.missing > 0)) throw new Error('read-your-writes broken (the table)');
}

/** Waits until the standby has replayed what the primary has written (between phases, so each starts level). */
async function caughtUp(primary: Client, standby: Client) {
  const target = (await primary.query('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn;
  for (let i = 0; i < 240; i++) {
    const { rows } = await standby.query('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done', [target]);
    if (rows[0].done) return;
    await sleep(250);
  }
  throw new Error('the standby did not catch up within 60 s');
}

function report(phases: Phase[], o: Record<string, number | string>) {
  const fixed = (value: number, digits = 0) => (Number.isFinite(value) ? value.toFixed(digits) : '–');
  console.log(
    `\n## Graph reads with and without the standby, under a write load: ${o.seconds} s per phase, ${o.clients} ` +
      `clients, ${o.writeRate} node writes/s, ${o.nodes} nodes\n`,
  );
  console.log(
    `Anchor: the same API reading the primary only, in the same run (phases alternate). Every ${o.ownEvery}th read ` +
      `is the writer's latest node with its Weft-Read-After. Pool ${o.poolSize}. Machine: ${os.cpus().length} cores.\n`,
  );
  console.log(
    '| reads from | round | reads/s | p50 ms | p95 ms | writes/s | write p95 ms | replay lag p50 / p95 / max ms | ' +
      'lag max KiB | served: standby / behind / failed | own writes found | shed (503) | machine busy | ' +
      'core-ms per read: API / primary PG / standby PG |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const p of phases) {
    const m = p.measurement;
    const total = p.served.standby! + p.served.behind! + p.served.failed!;
    const share = (key: string) => (total ? `${fixed((100 * p.served[key]!) / total)} %` : '–');
    const perRead = (group: string) => fixed((p.cpu.seconds[group]! * 1000) / Math.max(1, m.count), 2);
    console.log(
      `| ${p.reads} | ${p.round} | ${fixed(m.rps)} | ${fixed(m.p50, 1)} | ${fixed(m.p95, 1)} | ` +
        `${fixed(p.writes.rate, 1)} | ${fixed(p.writes.p95)} | ${fixed(p.lag.p50)} / ${fixed(p.lag.p95)} / ` +
        `${fixed(p.lag.max)} | ${fixed(p.lag.maxBytes / 1024)} | ${share('standby')} / ${share('behind')} / ` +
        `${share('failed')} | ${p.own.found}/${p.own.of} | ${p.shed} | ${fixed(100 * p.cpu.machineBusy)} % | ` +
        `${perRead('api')} / ${perRead('primary')} / ${perRead('standby')} |`,
    );
  }
  const mean = (reads: string, pick: (p: Phase) => number) => {
    const chosen = phases.filter((p) => p.reads === reads);
    return chosen.reduce((sum, p) => sum + pick(p), 0) / chosen.length;
  };
  const ratio = (pick: (p: Phase) => number) => fixed(mean('standby', pick) / mean('primary', pick), 2);
  console.log(
    `\nStandby ÷ primary-only (means over the rounds): reads/s ×${ratio((p) => p.measurement.rps)}, ` +
      `p50 ×${ratio((p) => p.measurement.p50)}, p95 ×${ratio((p) => p.measurement.p95)}, ` +
      `primary Postgres core-ms per read ×${ratio((p) => p.cpu.seconds.primary! / Math.max(1, p.measurement.count))}.`,
  );
}
