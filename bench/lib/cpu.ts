import { readdirSync, readFileSync } from 'node:fs';

/**
 * Where a benchmark's CPU went, from /proc (Linux): the CPU seconds of groups of processes and of the whole
 * machine over a measured window, so a table can say what limited it (the cores, Postgres, Temporal, Weft).
 * Processes that end inside the window lose their last ticks; the benches read them while they run.
 */
const TICKS_PER_SECOND = 100;

/** utime + stime of one process, in seconds; 0 once it is gone. */
function processSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name (which may hold spaces) start after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** Every process whose command name is `name` (`postgres`: the primary's and a standby's backends). */
export function pidsNamed(name: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === name) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/**
 * The Postgres backends serving `databases` (`postgres: 15/main: weft_app weft_bench 127.0.0.1(…) idle`), and
 * the WAL sender when `walSender`: the share of the machine's Postgres a bench causes, apart from other work.
 */
export function postgresBackends(databases: readonly string[], walSender = false): number[] {
  return pidsNamed('postgres').filter((pid) => {
    try {
      const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (walSender && /: walsender /.test(command)) return true;
      return databases.some((database) => command.includes(` ${database} `));
    } catch {
      return false;
    }
  });
}

/** `root` and every process below it (a postmaster and its backends), by the parent pid in /proc/<pid>/stat. */
export function processesUnder(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // Gone meanwhile.
    }
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length) {
    const pid = queue.pop()!;
    found.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return found;
}

/** The machine's busy and total CPU seconds since boot (all cores). */
function machineSeconds(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const values = line.trim().split(/\s+/).slice(1).map(Number);
  const total = values.reduce((sum, value) => sum + value, 0);
  // idle and iowait are the 4th and 5th.
  const idle = (values[3] ?? 0) + (values[4] ?? 0);
  return { busy: (total - idle) / TICKS_PER_SECOND, total: total / TICKS_PER_SECOND };
}

export type CpuGroups = Record<string, () => number[]>;

export interface CpuUse {
  /** CPU seconds per group over the window. */
  seconds: Record<string, number>;
  /** The machine's busy fraction over the window (1 = every core busy). */
  machineBusy: number;
  wallSeconds: number;
}

/**
 * Starts a window: `stop()` answers each group's CPU seconds since (its pids are listed at both ends, so a
 * process started meanwhile counts from its start) and how busy the whole machine was.
 */
export function cpuWindow(groups: CpuGroups): { stop(): CpuUse } {
  const read = () => {
    const pids = Object.fromEntries(Object.entries(groups).map(([name, list]) => [name, list()]));
    const seconds = new Map<number, number>();
    for (const list of Object.values(pids)) for (const pid of list) seconds.set(pid, processSeconds(pid));
    return { pids, seconds };
  };
  const started = { ...read(), machine: machineSeconds(), at: process.hrtime.bigint() };
  return {
    stop() {
      const ended = read();
      const machine = machineSeconds();
      const result: Record<string, number> = {};
      for (const [name, list] of Object.entries(ended.pids)) {
        result[name] = list.reduce((sum, pid) => sum + (ended.seconds.get(pid)! - (started.seconds.get(pid) ?? 0)), 0);
      }
      return {
        seconds: result,
        machineBusy: (machine.busy - started.machine.busy) / Math.max(1e-9, machine.total - started.machine.total),
        wallSeconds: Number(process.hrtime.bigint() - started.at) / 1e9,
      };
    },
  };
}
