import type { CpuGroups } from './cpu';
import { cpuWindow } from './cpu';

/** `--name N` from a benchmark's arguments, else `fallback`. */
export function numberOption(args: readonly string[], name: string, fallback: number): number {
  const index = args.indexOf(`--${name}`);
  return index >= 0 ? Number(args[index + 1]) : fallback;
}

export function stringOption(args: readonly string[], name: string): string | undefined {
  const index = args.indexOf(`--${name}`);
  return index >= 0 ? args[index + 1] : undefined;
}

/** Latency and throughput of an async operation run by N concurrent clients for a fixed time. */
export interface Measurement {
  name: string;
  concurrency: number;
  count: number;
  rps: number;
  p50: number;
  p95: number;
  p99: number;
  /** CPU milliseconds per request of each group `measureAlternating` was given (its phases only). */
  cpuMsPerRequest?: Record<string, number>;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** `concurrency` loops running `operation` for `durationMs`: every call's latency (ms) and the elapsed seconds. */
async function load(
  operation: (iteration: number) => Promise<unknown>,
  concurrency: number,
  durationMs: number,
  start = 0,
): Promise<{ latencies: number[]; seconds: number }> {
  let i = start;
  const latencies: number[] = [];
  const started = process.hrtime.bigint();
  const end = Date.now() + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        const t0 = process.hrtime.bigint();
        await operation(i++);
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    }),
  );
  return { latencies, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

function summary(name: string, concurrency: number, latencies: number[], seconds: number): Measurement {
  latencies.sort((a, b) => a - b);
  return {
    name,
    concurrency,
    count: latencies.length,
    rps: latencies.length / seconds,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
  };
}

/**
 * Runs `operation` from `concurrency` loops for `durationMs` (after a short warm-up) and returns
 * the latency percentiles in milliseconds and the achieved rate. Bounded in time: it always stops.
 */
export async function measure(
  name: string,
  operation: (iteration: number) => Promise<unknown>,
  options: { concurrency: number; durationMs: number; warmupMs?: number },
): Promise<Measurement> {
  const warmupEnd = Date.now() + (options.warmupMs ?? 300);
  let i = 0;
  while (Date.now() < warmupEnd) await operation(i++);
  const { latencies, seconds } = await load(operation, options.concurrency, options.durationMs, i);
  return summary(name, options.concurrency, latencies, seconds);
}

/**
 * A subject's throughput against its anchor's at one concurrency, fair to both: each is first warmed
 * at that concurrency for `warmupMs` (the JIT, the pools), then they run in four alternating phases
 * (subject, anchor, anchor, subject), each a quarter of `durationMs`, so neither pays the warm-up
 * alone and a drift in the machine's load falls on both alike. Each side's phases are pooled. With
 * `cpu`, each side's CPU per request of those process groups too (bench/lib/cpu.ts): on a shared
 * machine, a figure other processes' load moves much less than req/s.
 */
export async function measureAlternating(
  subject: { name: string; operation: (iteration: number) => Promise<unknown> },
  anchor: { name: string; operation: (iteration: number) => Promise<unknown> },
  options: { concurrency: number; durationMs: number; warmupMs?: number; cpu?: CpuGroups },
): Promise<{ subject: Measurement; anchor: Measurement }> {
  const { concurrency, durationMs, warmupMs = 1000, cpu } = options;
  for (const side of [subject, anchor]) await load(side.operation, concurrency, warmupMs);
  const pooled = await alternatePhases(
    subject,
    anchor,
    (side) => load(side.operation, concurrency, durationMs / 4),
    cpu,
  );
  const of = (side: typeof subject) => {
    const { phases, cpuSeconds } = pooled.get(side)!;
    const latencies = phases.flatMap((phase) => phase.latencies);
    const seconds = phases.reduce((sum, phase) => sum + phase.seconds, 0);
    const measured = summary(side.name, concurrency, latencies, seconds);
    return cpu ? { ...measured, cpuMsPerRequest: cpuPerRequest(cpuSeconds, latencies.length) } : measured;
  };
  return { subject: of(subject), anchor: of(anchor) };
}

/**
 * The order both alternating measures keep (this file's `measureAlternating`, external-load.ts's `alternate`):
 * four phases, subject, anchor, anchor, subject, each run by `phase`, with the CPU of `cpu`'s groups read
 * around each. Answers each side's phases and CPU seconds per group, pooled.
 */
export async function alternatePhases<Side, Phase>(
  subject: Side,
  anchor: Side,
  phase: (side: Side) => Promise<Phase>,
  cpu?: CpuGroups,
): Promise<Map<Side, { phases: Phase[]; cpuSeconds: Record<string, number> }>> {
  const pooled = new Map(
    [subject, anchor].map((side) => [side, { phases: [] as Phase[], cpuSeconds: {} as Record<string, number> }]),
  );
  for (const side of [subject, anchor, anchor, subject]) {
    const window = cpu && cpuWindow(cpu);
    const into = pooled.get(side)!;
    into.phases.push(await phase(side));
    for (const [group, seconds] of Object.entries(window?.stop().seconds ?? {})) {
      into.cpuSeconds[group] = (into.cpuSeconds[group] ?? 0) + seconds;
    }
  }
  return pooled;
}

/** Each group's CPU milliseconds per request, from its CPU seconds over `count` requests. */
export const cpuPerRequest = (cpuSeconds: Record<string, number>, count: number): Record<string, number> =>
  Object.fromEntries(Object.entries(cpuSeconds).map(([group, seconds]) => [group, (seconds * 1000) / count]));

const fixed = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : '–');

/** A markdown table of measurements, each beside its anchor: ratio = ours / anchor for req/s. */
export function markdownTable(rows: { subject: Measurement; anchor?: Measurement }[]): string {
  const lines = [
    '| operation | clients | req/s | p50 ms | p95 ms | p99 ms | anchor | anchor req/s | anchor p95 ms | req/s ratio |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const { subject: s, anchor: a } of rows) {
    lines.push(
      `| ${s.name} | ${s.concurrency} | ${fixed(s.rps, 0)} | ${fixed(s.p50)} | ${fixed(s.p95)} | ${fixed(s.p99)} | ` +
        `${a?.name ?? '–'} | ${a ? fixed(a.rps, 0) : '–'} | ${a ? fixed(a.p95) : '–'} | ` +
        `${a ? fixed(s.rps / a.rps) : '–'} |`,
    );
  }
  return lines.join('\n');
}

/**
 * One client alternating subject and anchor request by request (the order flipped each time), so
 * both see the same machine load: their p50s and the median of the per-pair differences.
 */
export async function pairedOverhead(
  subject: (i: number) => Promise<unknown>,
  anchor: (i: number) => Promise<unknown>,
  durationMs: number,
): Promise<{ subjectP50: number; anchorP50: number; medianDifference: number; pairs: number }> {
  const time = async (operation: (i: number) => Promise<unknown>, i: number) => {
    const t0 = process.hrtime.bigint();
    await operation(i);
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
  const subjects: number[] = [];
  const anchors: number[] = [];
  const differences: number[] = [];
  const end = Date.now() + durationMs;
  for (let i = 0; Date.now() < end; i++) {
    let s: number;
    let a: number;
    if (i % 2 === 0) {
      s = await time(subject, i);
      a = await time(anchor, i);
    } else {
      a = await time(anchor, i);
      s = await time(subject, i);
    }
    subjects.push(s);
    anchors.push(a);
    differences.push(s - a);
  }
  const median = (values: number[]) =>
    percentile(
      [...values].sort((x, y) => x - y),
      50,
    );
  return {
    subjectP50: median(subjects),
    anchorP50: median(anchors),
    medianDifference: median(differences),
    pairs: differences.length,
  };
}

/** Times `operation` once per item, one at a time. */
export async function timeEach<T>(name: string, items: readonly T[], operation: (item: T) => Promise<unknown>) {
  const latencies: number[] = [];
  const started = process.hrtime.bigint();
  for (const item of items) {
    const t0 = process.hrtime.bigint();
    await operation(item);
    latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return summary(name, 1, latencies, seconds);
}
