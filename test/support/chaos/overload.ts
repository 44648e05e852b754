import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { OverloadClientParams, OverloadClientResult } from './overload-client.js';
import { PROBE_KEY } from './scenarios.js';
import { type Scenario, type ScenarioContext, type StackProcess, peakRssMbOf } from './scenario.js';
import { ChildSet, type NotifyChild, ownCpuGroup } from './stack.js';

/** What the API answered during the overload (`overload-client.ts` measures it), and what it cost. */
export interface OverloadStats extends Omit<OverloadClientResult, 'ids'> {
  /** The test process's own event-loop delay meanwhile (it hosts the receiver), ms. */
  harnessLoopDelayP99Ms: number;
  harnessLoopDelayMaxMs: number;
  /** Peak RSS (VmHWM) of each process of the stack at the end of the overload, MiB. */
  peakRssMb: Record<string, number>;
}

/** CPU time and time spent waiting for a CPU (run queue) of a process's main thread, in s (/proc/<pid>/schedstat). */
function schedstat(pid: number): { cpu: number; waiting: number } {
  try {
    const [cpu, waiting] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ').map(Number);
    return { cpu: cpu! / 1e9, waiting: waiting! / 1e9 };
  } catch {
    return { cpu: 0, waiting: 0 };
  }
}

/**
 * The CPU weight the scenario gives the API processes and the load generator: each runs in a CPU
 * group of its own (its own session, whose autogroup gets this nice value; `ownCpuGroup` in
 * stack.ts), as a deployment gives a service a cgroup `cpu.weight` or systemd `CPUWeight=`.
 * CHAOS_OVERLOAD_NICE, default −10 (about 9× the share of a nice-0 group); unset with "off".
 * Shedding needs CPU to answer: beside the whole test suite (load average 12–17 on 2 cores) the
 * API's main thread was on a CPU 5.0 s of 71 s and runnable but waiting for one 65.4 s, and 2,243
 * requests timed out; a plain `nice -10` did not help (9.4 s of 69 s, 1,564 timeouts), because the
 * kernel shares the CPU between sessions first (RELIABILITY.md, finding 3).
 */
const OVERLOAD_NICE = process.env.CHAOS_OVERLOAD_NICE === 'off' ? undefined : Number(process.env.CHAOS_OVERLOAD_NICE ?? -10);
const cpuGroup = OVERLOAD_NICE === undefined ? {} : { cpuGroupNice: OVERLOAD_NICE };

const CLIENT = fileURLToPath(new URL('./overload-client.ts', import.meta.url));

/** Peak RSS (VmHWM, MiB) of each named process of the stack, noted in the timeline. */
export function peakRssOf(ctx: ScenarioContext, names: readonly string[]): Record<string, number> {
  const out = Object.fromEntries(names.map((n) => [n, peakRssMbOf(ctx.process(n).pid)]));
  ctx.note(`peak RSS (VmHWM): ${names.map((n) => `${n} ${out[n]} MiB`).join(', ')}`);
  return out;
}

/**
 * Overload: a calibration step measures what the API accepts per second on this machine now (16
 * clients in a closed loop, like the bench's http-enqueue, for `calibrationMs`), then `factor` ×
 * that rate of POST /v1/notifications is offered for `durationMs` (open loop, at most 512 requests
 * open at once), against a stack with the api, relay and dispatcher in separate processes with
 * their default shedding settings. The generator runs in its own process and measures its own
 * event-loop delay, so a timeout caused by a starved client shows as such; every answer is
 * classified (`sink.stats`), and the accepted notifications are audited like any scenario's.
 */
export function overloadScenario(
  params: {
    readonly factor: number;
    readonly durationMs: number;
    readonly seed: number;
    readonly calibrationMs?: number;
    /** A fixed rate instead of factor × the calibrated capacity (CHAOS_OVERLOAD_RATE). */
    readonly ratePerSec?: number;
  },
  sink: { stats?: OverloadStats },
): Scenario {
  const api: StackProcess = { name: 'api', roles: ['api'], ...cpuGroup };
  const label = params.ratePerSec !== undefined ? `${params.ratePerSec}/s` : `${params.factor}× capacity`;
  return {
    name: `overload: ${label} for ${Math.round(params.durationMs / 1000)} s`,
    notifications: 0,
    spreadMs: 0,
    seed: params.seed,
    // Shedding on event-loop utilization too (off by default): at 5× capacity the API's loop is
    // never very late but never idle, and its answers queue in the kernel (RELIABILITY.md, finding 3).
    env: { NOTIFY_API_KEYS: `chaos:${PROBE_KEY}`, NOTIFY_API_MAX_EVENT_LOOP_UTILIZATION: process.env.CHAOS_OVERLOAD_ELU ?? '90' },
    processes: [api, { name: 'relay', roles: ['relay'] }, { name: 'dispatcher', roles: ['dispatcher'] }],
    settleTimeoutMs: 600_000,
    async fault(ctx) {
      // The calibration's API: one more api process, without event-loop shedding (as the bench ran it).
      const calibration = new ChildSet();
      try {
        const calApi = await calibration.start(
          'api-calibration',
          ['api'],
          { ...ctx.env, NOTIFY_API_MAX_EVENT_LOOP_DELAY_MS: '0', NOTIFY_API_MAX_EVENT_LOOP_UTILIZATION: '0' },
          cpuGroup,
        );
        ctx.note(
          `started api-calibration (pid ${calApi.pid}), NOTIFY_API_MAX_EVENT_LOOP_DELAY_MS=0${calApi.cpuGroup ? `, ${calApi.cpuGroup}` : ''}`,
        );
        await overload(ctx, calApi);
      } finally {
        await calibration.stopAll();
        await calibration.killAll();
      }
    },
  };

  async function overload(ctx: ScenarioContext, calApi: NotifyChild): Promise<void> {
    const clientParams: OverloadClientParams = {
      calibrationUrl: `${calApi.url}/v1/notifications`,
      calibrationMetricsUrl: `${calApi.adminUrl}/metrics`,
      url: `${ctx.process('api').url}/v1/notifications`,
      metricsUrl: `${ctx.process('api').adminUrl}/metrics`,
      key: PROBE_KEY,
      receiverUrl: ctx.receiver.url,
      calibrationMs: params.calibrationMs ?? 10_000,
      calibrationClients: 16,
      factor: params.factor,
      ...(params.ratePerSec !== undefined ? { ratePerSec: params.ratePerSec } : {}),
      durationMs: params.durationMs,
      concurrency: 512,
      timeoutMs: 10_000,
    };
    const harness = monitorEventLoopDelay({ resolution: 10 });
    harness.enable();
    const child = spawn(process.execPath, ['--import', 'tsx', CLIENT, JSON.stringify(clientParams)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: OVERLOAD_NICE !== undefined, // its own session, for its own CPU group
    });
    if (OVERLOAD_NICE !== undefined && child.pid !== undefined) {
      try {
        ownCpuGroup(child.pid, OVERLOAD_NICE);
        ctx.note(`load generator (pid ${child.pid}) in its own CPU group at nice ${OVERLOAD_NICE}`);
      } catch (err) {
        ctx.note(`load generator (pid ${child.pid}) has no CPU group of its own: ${(err as Error).message}`);
      }
    }
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    let result: OverloadClientResult | undefined;
    const apiPid = ctx.process('api').pid;
    let before = { cpu: 0, waiting: 0, at: 0 };
    for await (const line of createInterface({ input: child.stdout })) {
      if (line.startsWith('note offering')) before = { ...schedstat(apiPid), at: Date.now() };
      if (line.startsWith('note ')) ctx.note(line.slice(5));
      else if (line.startsWith('result ')) result = JSON.parse(line.slice(7)) as OverloadClientResult;
    }
    harness.disable();
    const after = schedstat(apiPid);
    ctx.note(
      `API main thread during the overload: ${(after.cpu - before.cpu).toFixed(1)} s on a CPU, ` +
        `${(after.waiting - before.waiting).toFixed(1)} s runnable but waiting for one, of ${((Date.now() - before.at) / 1000).toFixed(1)} s`,
    );
    if (!result) throw new Error(`the overload client ended without a result:\n${stderr.slice(-4000)}`);
    const { ids, ...rest } = result;
    ctx.adopt(ids);
    const stats: OverloadStats = (sink.stats = {
      ...rest,
      harnessLoopDelayP99Ms: Math.round(harness.percentile(99) / 1e6),
      harnessLoopDelayMaxMs: Math.round(harness.max / 1e6),
      peakRssMb: {},
    });
    ctx.note(
      `offered ${stats.offered}, sent ${stats.sent}, accepted ${stats.accepted} (slowest ${stats.maxAcceptedMs} ms), ` +
        `shed ${stats.shed} ${JSON.stringify(stats.shedByCode)} (slowest ${stats.maxShedMs} ms), timeouts ${stats.timeouts} ` +
        `(${stats.timeoutsWhileGeneratorStalled} while the generator was stalled > 1 s), other ${JSON.stringify(stats.other)}, ` +
        `sent again after a keep-alive reset ${stats.resentAfterReset}; ` +
        `API shed by reason ${JSON.stringify(stats.apiShedByReason)}; event-loop delay p99/max: generator ` +
        `${stats.generatorLoopDelayP99Ms}/${stats.generatorLoopDelayMaxMs} ms, API ${stats.apiLoopDelayP99Ms}/${stats.apiLoopDelayMaxMs} ms, ` +
        `test process ${stats.harnessLoopDelayP99Ms}/${stats.harnessLoopDelayMaxMs} ms`,
    );
    stats.peakRssMb = peakRssOf(ctx, ['api', 'relay', 'dispatcher']);
  }
}
