import { PROBE_KEY } from './scenarios.js';
import type { Scenario, StackProcess } from './scenario.js';

/**
 * POST /v1/notifications throughput the bench measured (BENCHMARKS.md, http-enqueue, 16
 * connections: 572/s); the overload scenario offers five times this unless CHAOS_OVERLOAD_RATE says otherwise.
 */
export const MEASURED_API_CAPACITY_PER_SEC = 572;

/** What the API answered during the overload. */
export interface OverloadStats {
  /** Requests the schedule called for, and the ones the generator could send (it caps its own concurrency). */
  offered: number;
  sent: number;
  accepted: number;
  /** 503 `overloaded` / `database_unreachable` and 429 answers. */
  shed: number;
  /** Shed answers without a Retry-After header (must be 0). */
  shedWithoutRetryAfter: number;
  /** No answer within 10 s (must be 0: shedding instead of timing out). */
  timeouts: number;
  /** Connection errors and any other status, by kind. */
  other: Record<string, number>;
  /** Slowest answer, in ms. */
  maxAnswerMs: number;
}

const CLIENT_CONCURRENCY = 512;
const REQUEST_TIMEOUT_MS = 10_000;

/**
 * Overload: `ratePerSec` POST /v1/notifications for `durationMs` (open loop, at most 512 requests
 * open at once from this client), against a stack with the api, relay and dispatcher in separate
 * processes. Every answer is classified (`sink.stats`); the accepted notifications are audited
 * like any scenario's (every one delivered afterwards), and the table row carries the peak RSS.
 */
export function overloadScenario(
  params: { readonly ratePerSec: number; readonly durationMs: number; readonly seed: number },
  sink: { stats?: OverloadStats },
): Scenario {
  const api: StackProcess = { name: 'api', roles: ['api'] };
  return {
    name: `overload: ${params.ratePerSec}/s for ${Math.round(params.durationMs / 1000)} s`,
    notifications: 0,
    spreadMs: 0,
    seed: params.seed,
    env: { NOTIFY_API_KEYS: `chaos:${PROBE_KEY}` },
    processes: [api, { name: 'relay', roles: ['relay'] }, { name: 'dispatcher', roles: ['dispatcher'] }],
    settleTimeoutMs: 600_000,
    async fault(ctx) {
      const url = `${ctx.process('api').url}/v1/notifications`;
      const stats: OverloadStats = (sink.stats = {
        offered: 0,
        sent: 0,
        accepted: 0,
        shed: 0,
        shedWithoutRetryAfter: 0,
        timeouts: 0,
        other: {},
        maxAnswerMs: 0,
      });
      const ids: string[] = [];
      const open = new Set<Promise<void>>();
      const post = async (i: number) => {
        const t0 = Date.now();
        try {
          const res = await fetch(url, {
            method: 'POST',
            headers: { authorization: `Bearer ${PROBE_KEY}`, 'content-type': 'application/json' },
            body: JSON.stringify({ channel: 'webhook', to: `${ctx.receiver.url}/hooks/${i % 25}`, body: `overload ${i}` }),
            signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
          });
          const body = (await res.json().catch(() => ({}))) as { id?: string };
          if (res.status === 202 && body.id) {
            stats.accepted++;
            ids.push(body.id);
          } else if (res.status === 503 || res.status === 429) {
            stats.shed++;
            if (!res.headers.get('retry-after')) stats.shedWithoutRetryAfter++;
          } else stats.other[String(res.status)] = (stats.other[String(res.status)] ?? 0) + 1;
        } catch (err) {
          if ((err as Error).name === 'TimeoutError') stats.timeouts++;
          else {
            const kind = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
            stats.other[kind] = (stats.other[kind] ?? 0) + 1;
          }
        } finally {
          stats.maxAnswerMs = Math.max(stats.maxAnswerMs, Date.now() - t0);
        }
      };
      const start = Date.now();
      ctx.note(`offering ${params.ratePerSec}/s for ${params.durationMs} ms`);
      for (let tick = 1; Date.now() - start < params.durationMs; tick++) {
        stats.offered = Math.floor(((Date.now() - start) / 1000) * params.ratePerSec);
        while (stats.sent < stats.offered && open.size < CLIENT_CONCURRENCY) {
          const p = post(stats.sent++).finally(() => open.delete(p));
          open.add(p);
        }
        // Pacing of the generator (10 ms ticks): the one waiting primitive, on the clock.
        const next = start + tick * 10;
        await ctx.until(() => Date.now() >= next, 'the next tick', 10_000);
      }
      await Promise.all(open);
      ctx.adopt(ids);
      ctx.note(
        `offered ${stats.offered}, sent ${stats.sent}, accepted ${stats.accepted}, shed ${stats.shed}, timeouts ${stats.timeouts}, ` +
          `other ${JSON.stringify(stats.other)}, slowest answer ${stats.maxAnswerMs} ms`,
      );
    },
  };
}
