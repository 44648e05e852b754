// Where the service allocates, per notification, under a steady load (session 33, BENCHMARKS.md):
// one `notify start` on a fresh database with V8's sampling heap profiler preloaded
// (bench/lib/alloc-sampler.ts, which keeps the samples of collected objects too), a 3-s warm-up
// window and one measured window from bench/workers/latency-load.ts (the end-to-end scenario's
// load). The profile is read after each window; the samples taken between the two reads are the
// measured window's allocations, printed as bytes per delivered notification by package, by
// allocating function, and by the innermost frame of our own packages. Allocation is not CPU: it
// says which code makes garbage (what the young generation copies and what gets promoted).
//   pnpm build && tsc -p bench/tsconfig.json && node bench/dist/alloc-probe.js \
//     [--rate 500] [--window-ms 10000] [--top 25] [NAME=value ...]
// NAME=value pairs go into the service's environment. Needs PostgreSQL and Kafka, as `pnpm bench`.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { envAssignments, optionTaker } from './lib/options.js';
import { ROOT } from './lib/root.js';
import { startReceiver } from './lib/receiver.js';
import { startNotifyService } from './lib/service.js';
import { createStack } from './lib/stack.js';
import { sleep } from './lib/stats.js';
import { loadWindow } from './scenarios/end-to-end.js';

const args = process.argv.slice(2);
const option = optionTaker(args);
const rate = Number(option('--rate', '500'));
const windowMs = Number(option('--window-ms', '10000'));
const top = Number(option('--top', '25'));
const env = envAssignments(args);

/** The parts of a V8 sampling heap profile (HeapProfiler.SamplingHeapProfile) read here. */
interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children: readonly ProfileNode[];
}
interface SamplingProfile {
  readonly head: ProfileNode;
  readonly samples: readonly { readonly size: number; readonly nodeId: number; readonly ordinal: number }[];
}
interface Frame {
  readonly fn: string;
  /** Repository-relative file, a package-relative one under node_modules, or node's own (`node:…`). */
  readonly file: string;
  readonly line: number;
}

function frameOf(node: ProfileNode): Frame {
  const { functionName, url, lineNumber } = node.callFrame;
  const inModules = url.lastIndexOf('node_modules/');
  const file = inModules >= 0 ? url.slice(inModules + 'node_modules/'.length) : url.replace(`file://${ROOT}/`, '');
  return { fn: functionName || '(anonymous)', file, line: lineNumber + 1 };
}

/** Each node's stack, outermost frame first. */
function stacks(profile: SamplingProfile): Map<number, Frame[]> {
  const out = new Map<number, Frame[]>();
  const walk = (node: ProfileNode, above: Frame[]) => {
    const stack = [...above, frameOf(node)];
    out.set(node.id, stack);
    for (const child of node.children) walk(child, stack);
  };
  walk(profile.head, []);
  return out;
}

/** `packages/relay`, a package name under node_modules (scope included), or `node` for node's own files. */
function packageOf(file: string): string {
  if (file.startsWith('node:') || file === '') return 'node';
  if (file.startsWith('packages/')) return file.split('/').slice(0, 2).join('/');
  const parts = file.split('/');
  return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

function tally(counts: Map<string, number>, key: string, bytes: number) {
  counts.set(key, (counts.get(key) ?? 0) + bytes);
}

function print(title: string, counts: Map<string, number>, total: number, per: number) {
  console.log(`  ${title}`);
  for (const [key, bytes] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(
      `    ${((100 * bytes) / total).toFixed(1).padStart(5)} %  ${Math.round(bytes / per)
        .toString()
        .padStart(7)} B  ${key}`,
    );
  }
}

/** Asks the service for its profile so far and waits for the file. */
async function readProfile(pid: number, dir: string, n: number): Promise<SamplingProfile> {
  process.kill(pid, 'SIGUSR2');
  const file = path.join(dir, `${n}.json`);
  for (let waited = 0; !existsSync(file); waited += 100) {
    if (waited > 60_000) throw new Error(`the service wrote no allocation profile to ${file} within 60 s`);
    await sleep(100);
  }
  return JSON.parse(readFileSync(file, 'utf8')) as SamplingProfile;
}

const stack = await createStack(process.env, () => {});
const receiver = await startReceiver();
const outDir = mkdtempSync(path.join(tmpdir(), 'notify-alloc-'));
const db = await stack.freshDatabase('alloc_probe');
const service = await startNotifyService({
  name: 'alloc-probe',
  databaseUrl: db.url,
  brokers: await stack.kafkaBrokers(),
  topicPrefix: stack.topicPrefix('alloc-probe'),
  env: { ...env, BENCH_ALLOC_OUT: outDir },
  nodeFlags: ['--import', path.join(ROOT, 'bench', 'dist', 'lib', 'alloc-sampler.js')],
});

/** One window at `rate` for `ms`; answers how many notifications arrived (its lead-in's and lead-out's too: the profile spans them). */
async function window(ms: number): Promise<number> {
  receiver.reset();
  const { result } = await loadWindow('alloc-probe-load', receiver, { system: 'notify', url: db.url, rate, durationMs: ms });
  return result.delivered;
}

try {
  const pid = service.child.process.pid!;
  await window(3_000);
  const before = await readProfile(pid, outDir, 1);
  const delivered = await window(windowMs);
  const after = await readProfile(pid, outDir, 2);
  const last = before.samples.reduce((m, s) => Math.max(m, s.ordinal), 0);
  const frames = stacks(after);
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const byOurs = new Map<string, number>();
  let total = 0;
  for (const sample of after.samples) {
    if (sample.ordinal <= last) continue;
    const st = frames.get(sample.nodeId)!;
    total += sample.size;
    // The profiler's own work (this preload, the inspector) is left in: it is a small share, named.
    const lib = st.findLast((f) => packageOf(f.file) !== 'node');
    tally(byPackage, lib ? packageOf(lib.file) : 'node (no library frame)', sample.size);
    const leaf = st[st.length - 1]!;
    tally(byFunction, `${leaf.fn} ${leaf.file}:${leaf.line}`, sample.size);
    const ours = st.findLast((f) => f.file.startsWith('packages/'));
    tally(byOurs, ours ? `${ours.fn} ${ours.file}:${ours.line}` : '(no frame of ours: an event-loop callback of a library)', sample.size);
  }
  console.log(
    `${rate}/s for ${windowMs} ms: ${delivered} notifications delivered, ${(total / 1e6).toFixed(1)} MB allocated (sampled), ` +
      `${Math.round(total / delivered)} B per notification`,
  );
  print('by package (innermost frame outside node itself)', byPackage, total, delivered);
  print('by allocating function', byFunction, total, delivered);
  print('by innermost frame of our packages', byOurs, total, delivered);
} finally {
  await service.child.stop();
  await db.drop();
  await receiver.close();
  await stack.cleanup();
  rmSync(outDir, { recursive: true, force: true });
}
