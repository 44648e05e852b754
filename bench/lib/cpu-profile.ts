import { readFileSync } from 'node:fs';

/** The parts of a V8 `.cpuprofile` (what `node --cpu-prof` writes) that the summary reads. */
interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly hitCount?: number;
  readonly children?: readonly number[];
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples?: readonly number[];
}

/** One row of a summary: a share of the sampled time. */
interface ProfileRow {
  readonly name: string;
  readonly ms: number;
  /** Percent of all samples, idle included. */
  readonly pct: number;
}

/** Where the sampled time of one process went. */
export interface ProfileSummary {
  readonly durationMs: number;
  /** Percent of samples not idle: how busy the process's main thread was. */
  readonly busyPct: number;
  /** Self time by function (`name file:line`). */
  readonly topSelf: readonly ProfileRow[];
  /** Inclusive time by function: time with the function anywhere on the stack. */
  readonly topInclusive: readonly ProfileRow[];
  /** Self time by origin: an npm package, a workspace package, node internals, GC. */
  readonly byOrigin: readonly ProfileRow[];
}

/** The package or area a script URL belongs to. */
export function originOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  const pkgs = [...url.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)/g)];
  if (pkgs.length > 0) return pkgs[pkgs.length - 1]![1]!;
  const ws = /\/(packages\/[^/]+|migrations|bench|scripts|test)\//.exec(url);
  return ws ? ws[1]! : url;
}

function frameName(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url
    .replace(/^.*node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?/, '')
    .replace(/^file:\/\/.*?\/(packages|bench|migrations)\//, '$1/');
  return `${functionName || '(anonymous)'} ${file}${url ? `:${lineNumber + 1}` : ''}`;
}

/** Summarises one `.cpuprofile`: top frames by self and inclusive time, and self time by origin. */
export function summariseProfile(file: string, top = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const hits = new Map<number, number>();
  if (profile.samples) for (const s of profile.samples) hits.set(s, (hits.get(s) ?? 0) + 1);
  else for (const n of profile.nodes) hits.set(n.id, n.hitCount ?? 0);
  const total = [...hits.values()].reduce((a, b) => a + b, 0) || 1;
  const durationMs = (profile.endTime - profile.startTime) / 1000;
  const msPerHit = durationMs / total;

  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const origin = new Map<string, number>();
  let idle = 0;
  for (const [id, count] of hits) {
    const node = byId.get(id)!;
    if (node.callFrame.functionName === '(idle)') idle += count;
    const name = frameName(node);
    self.set(name, (self.get(name) ?? 0) + count);
    const o = originOf(node.callFrame.url, node.callFrame.functionName);
    origin.set(o, (origin.get(o) ?? 0) + count);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur)!;
      if (n.callFrame.functionName === '(root)') break;
      const key = frameName(n);
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + count);
    }
  }
  const rows = (m: Map<string, number>, n: number): ProfileRow[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, count]) => ({ name, ms: Math.round(count * msPerHit), pct: Math.round((count / total) * 1000) / 10 }));
  return {
    durationMs: Math.round(durationMs),
    busyPct: Math.round(((total - idle) / total) * 1000) / 10,
    topSelf: rows(self, top),
    topInclusive: rows(inclusive, top),
    byOrigin: rows(origin, top),
  };
}

/** A summary as text (what `pnpm bench --profile` prints and BENCHMARKS.md quotes). */
export function renderProfile(title: string, s: ProfileSummary): string {
  const block = (heading: string, rows: readonly ProfileRow[]) =>
    [`  ${heading}`, ...rows.map((r) => `    ${String(r.pct).padStart(5)} %  ${String(r.ms).padStart(6)} ms  ${r.name}`)].join('\n');
  return [
    `${title}: ${s.durationMs} ms sampled, main thread busy ${s.busyPct} %`,
    block('self time by origin', s.byOrigin),
    block('self time by function', s.topSelf),
    block('inclusive time by function', s.topInclusive),
  ].join('\n');
}
