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
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
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
  const latencies: number[] = [];
  const started = process.hrtime.bigint();
  const end = Date.now() + options.durationMs;
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (Date.now() < end) {
        const t0 = process.hrtime.bigint();
        await operation(i++);
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  return {
    name,
    concurrency: options.concurrency,
    count: latencies.length,
    rps: latencies.length / seconds,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
  };
}

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
  latencies.sort((a, b) => a - b);
  return {
    name,
    concurrency: 1,
    count: latencies.length,
    rps: latencies.length / seconds,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
  } satisfies Measurement;
}
