/**
 * Where a V8 CPU profile's time went, grouped so a reader can act on it: self time per package under
 * node_modules, per file of our own source, and per V8 pseudo-frame ((garbage collector), (idle),
 * (program)); and the heaviest functions by self time. Reads the `.cpuprofile` JSON that
 * `node --cpu-prof` or the inspector's `Profiler.stop` writes.
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}

export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileShare {
  name: string;
  ms: number;
  share: number;
}

/** The group a frame's self time counts towards: a package, one of our files, node's own code, or V8's. */
export function frameGroup(frame: CallFrame): string {
  const url = frame.url;
  if (!url) return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const rest = url.slice(modules + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return url;
  const own = url.match(/\/(src|bench|activities|workflows|workers|migrations)\/.*$/);
  return own ? own[0].slice(1) : url;
}

/** Self time per group and per function (name @ group), heaviest first, over the profile's whole span. */
export function summariseProfile(
  profile: CpuProfile,
  top = 25,
): { totalMs: number; busyMs: number; groups: ProfileShare[]; functions: ProfileShare[] } {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const groups = new Map<string, number>();
  const functions = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, index) => {
    const node = byId.get(id);
    const micros = profile.timeDeltas[index] ?? 0;
    if (!node || micros <= 0) return;
    total += micros;
    const group = frameGroup(node.callFrame);
    groups.set(group, (groups.get(group) ?? 0) + micros);
    const name = `${node.callFrame.functionName || '(anonymous)'} @ ${group}:${node.callFrame.lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + micros);
  });
  const ranked = (map: Map<string, number>) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, micros]) => ({ name, ms: micros / 1000, share: total ? micros / total : 0 }));
  const idle = groups.get('(idle)') ?? 0;
  return { totalMs: total / 1000, busyMs: (total - idle) / 1000, groups: ranked(groups), functions: ranked(functions) };
}

/** A summary as two markdown tables. */
export function profileTables(summary: ReturnType<typeof summariseProfile>): string {
  const table = (title: string, rows: ProfileShare[]) =>
    [`| ${title} | self ms | share |`, '|---|---|---|']
      .concat(rows.map((row) => `| ${row.name} | ${row.ms.toFixed(0)} | ${(row.share * 100).toFixed(1)} % |`))
      .join('\n');
  return `${table('group', summary.groups)}\n\n${table('function', summary.functions)}`;
}
