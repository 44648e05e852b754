// `pnpm bench [--quick] [--profile] [--list] [--env NAME=value ...] [scenario ...]`
//
// Runs each scenario against the real local stack (PostgreSQL at DATABASE_URL or 127.0.0.1:5432,
// the project's Kafka broker), each in its own fresh database and topic prefix, prints one table
// and writes bench/results/<scenario>.json (bench/results/quick/ for --quick). Every figure sits
// next to a baseline measured in the same run; the verdict is on the ratio where a target is one.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { withDatabase } from '@notify/migrations';
import { kafkaScript } from './lib/kafka-script.js';
import { renderProfile, summariseProfile } from './lib/cpu-profile.js';
import { ROOT, mib, terminateChildren } from './lib/process.js';
import { type ScenarioReport, judge, renderTable, writeReport } from './lib/report.js';
import { createStack } from './lib/stack.js';
import { runWorker } from './lib/worker.js';
import { SCENARIOS } from './scenarios/index.js';
import type { BenchContext } from './scenarios/types.js';

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

function parseArgs(argv: readonly string[]) {
  const serviceEnv: Record<string, string> = {};
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] !== '--env') {
      rest.push(argv[i]!);
      continue;
    }
    const m = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(argv[++i] ?? '');
    if (!m) throw new Error('--env expects NAME=value');
    serviceEnv[m[1]!] = m[2]!;
  }
  const flags = new Set(rest.filter((a) => a.startsWith('--')));
  const names = rest.filter((a) => !a.startsWith('--'));
  for (const f of flags) {
    if (!['--quick', '--profile', '--list'].includes(f))
      throw new Error(`unknown option ${f}; expected --quick, --profile, --list, --env NAME=value`);
  }
  for (const n of names) {
    if (!SCENARIOS.some((s) => s.name === n))
      throw new Error(`unknown scenario "${n}"; expected one of ${SCENARIOS.map((s) => s.name).join(', ')}`);
  }
  return { quick: flags.has('--quick'), profile: flags.has('--profile'), list: flags.has('--list'), names, serviceEnv };
}

async function machine(serverUrl: string, floorRssBytes: number, serviceEnv: Record<string, string>) {
  const client = new pg.Client({ connectionString: withDatabase(serverUrl, 'postgres') });
  await client.connect();
  let postgres: string;
  const settings: Record<string, string> = {};
  try {
    postgres = (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
    for (const name of ['synchronous_commit', 'fsync', 'shared_buffers', 'max_connections', 'wal_level', 'autovacuum']) {
      settings[name] = (await client.query<Record<string, string>>(`SHOW ${name}`)).rows[0]![name]!;
    }
  } finally {
    await client.end();
  }
  // `java -version` prints to stderr.
  const javaOut = spawnSync('java', ['-version'], { encoding: 'utf8' });
  const java = (javaOut.stderr || javaOut.stdout || '').split('\n')[0]?.trim() || 'unknown';
  // The code measured: HEAD, and how many files outside bench/ differed from it when the run started.
  const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim() || 'unknown';
  const dirty = spawnSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' })
    .stdout.split('\n')
    .filter((l) => l.trim() !== '' && !l.slice(3).startsWith('bench/')).length;
  return {
    commit: head,
    uncommittedFilesOutsideBench: dirty,
    nproc: os.availableParallelism(),
    cpu: os.cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 1024 ** 3),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    postgres,
    postgresSettings: settings,
    kafka: (await kafkaScript()).KAFKA_VERSION,
    java,
    idleChildRssMiB: Math.round(floorRssBytes / 1024 / 1024),
    serviceEnv,
  };
}

/**
 * Summarises the main-thread .cpuprofile of every child profiled since `sinceMs` (performance.now()
 * time; one sub-directory per child): prints each and writes <file>.txt next to it.
 */
function summariseProfiles(dir: string, sinceMs: number): Record<string, unknown> {
  const since = performance.timeOrigin + sinceMs;
  const out: Record<string, unknown> = {};
  let children: string[];
  try {
    children = readdirSync(dir).filter((d) => statSync(path.join(dir, d)).isDirectory());
  } catch {
    return out;
  }
  for (const child of children) {
    // CPU.<yyyymmdd>.<hhmmss>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread.
    const files = readdirSync(path.join(dir, child)).filter((f) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(f));
    for (const f of files) {
      const file = path.join(dir, child, f);
      if (statSync(file).mtimeMs < since) continue;
      const summary = summariseProfile(file, 20);
      const text = renderProfile(`${child} (${f})`, summary);
      writeFileSync(`${file}.txt`, `${text}\n`);
      process.stderr.write(`${text}\n`);
      out[child] = summary;
    }
  }
  return out;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.list) {
    for (const s of SCENARIOS) process.stdout.write(`${s.name.padEnd(14)} ${s.description}\n`);
    return;
  }
  const selected = args.names.length > 0 ? SCENARIOS.filter((s) => args.names.includes(s.name)) : SCENARIOS;
  const mode = args.quick ? 'quick' : 'full';
  // A run with --env writes beside the default run, under a directory named after the settings.
  const envLabel = Object.entries(args.serviceEnv)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const outDir = path.join(ROOT, 'bench', 'results', ...(args.quick ? ['quick'] : []), ...(envLabel ? [`env-${envLabel}`] : []));
  const started = performance.now();
  const stack = await createStack(process.env, log);
  const onSignal = () => {
    log('interrupted: stopping child processes, dropping this run’s databases');
    // Dropping a database WITH (FORCE) cuts this process's own open connections: their errors are
    // expected now and must not end the process before the other databases are dropped.
    process.on('uncaughtException', () => {});
    terminateChildren();
    void stack.cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  // Every bench child runs compiled JS on plain node; its idle peak RSS is the floor the scenarios' figures start from.
  const floor = await runWorker('idle', 'bench/workers/idle.ts', {}, { timeoutMs: 30_000 });
  const machineInfo = await machine(stack.serverUrl, floor.peakRssBytes, args.serviceEnv);
  log(
    `mode ${mode}, run ${stack.runId}, ${machineInfo.nproc} cores, node ${process.version}, PostgreSQL ${machineInfo.postgres}, idle child ${mib(floor.peakRssBytes)}`,
  );
  if (selected.some((s) => s.needsKafka)) log(`Kafka at ${(await stack.kafkaBrokers()).join(',')}`);

  const ctx: BenchContext = {
    quick: args.quick,
    stack,
    log,
    ...(Object.keys(args.serviceEnv).length > 0 ? { serviceEnv: args.serviceEnv } : {}),
    ...(args.profile ? { cpuProfDir: path.join(ROOT, 'bench', 'results', 'profiles') } : {}),
  };
  const reports: ScenarioReport[] = [];
  for (const scenario of selected) {
    const t0 = performance.now();
    const startedAt = new Date().toISOString();
    const loadStart = os.loadavg()[0]!;
    log(`── ${scenario.name}: ${scenario.description}`);
    let report: ScenarioReport;
    try {
      const outcome = await scenario.run(ctx);
      report = {
        scenario: scenario.name,
        mode,
        startedAt,
        durationMs: Math.round(performance.now() - t0),
        machine: machineInfo,
        figures: outcome.figures.map(judge),
        peakRssMiB: Object.fromEntries(Object.entries(outcome.peakRss ?? {}).map(([k, v]) => [k, Math.round((v / 1024 / 1024) * 10) / 10])),
        details: outcome.details ?? {},
      };
    } catch (err) {
      log(`${scenario.name} failed: ${(err as Error).stack ?? String(err)}`);
      report = {
        scenario: scenario.name,
        mode,
        startedAt,
        durationMs: Math.round(performance.now() - t0),
        machine: machineInfo,
        figures: [],
        peakRssMiB: {},
        details: {},
        error: (err as Error).message,
      };
    } finally {
      await stack.deleteTopics(stack.topicPrefix(scenario.name)).catch((err) => log(`could not delete topics: ${(err as Error).message}`));
    }
    report = { ...report, loadAverage: { start: Math.round(loadStart * 100) / 100, end: Math.round(os.loadavg()[0]! * 100) / 100 } };
    if (ctx.cpuProfDir) report = { ...report, details: { ...report.details, profiles: summariseProfiles(ctx.cpuProfDir, t0) } };
    const file = writeReport(outDir, report);
    log(
      `${scenario.name} done in ${(report.durationMs / 1000).toFixed(1)} s (load average ${report.loadAverage?.start} → ${report.loadAverage?.end}) → ${path.relative(ROOT, file)}`,
    );
    reports.push(report);
  }
  await stack.cleanup();
  process.stdout.write(`\n${renderTable(reports)}\n\n`);
  process.stdout.write(
    `mode ${mode} · ${machineInfo.nproc} cores (${machineInfo.cpu}) · ${machineInfo.memoryGiB} GiB · node ${process.version} · PostgreSQL ${machineInfo.postgres} · Kafka ${machineInfo.kafka} · idle child RSS ${machineInfo.idleChildRssMiB} MiB · ${((performance.now() - started) / 1000).toFixed(0)} s\n`,
  );
  if (reports.some((r) => r.error)) process.exitCode = 1;
}

main().catch((err) => {
  log((err as Error).stack ?? String(err));
  process.exit(1);
});
