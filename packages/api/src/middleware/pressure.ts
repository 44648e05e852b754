import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env.js';
import type { EarlyCors } from './cors.js';
import { problem, problemResponse } from '../problem.js';

/** Why a request was shed (the `reason` label of `notify_api_requests_shed_total`). */
export type ShedReason = 'event_loop_delay' | 'event_loop_utilization' | 'in_flight';

/** How late this process's event loop runs, measured all the time (one timer, one histogram). */
export interface EventLoopPressure {
  /** The current delay in ms: the last sample's, or longer if the loop is stalled right now. */
  delayMs(): number;
  /**
   * The share of the last ~250 ms the event loop was busy (perf_hooks `eventLoopUtilization`,
   * a moving average of the sample windows), 0–1: near 1 when the process has more work than CPU.
   */
  utilization(): number;
  /** Stops the timer and the histogram. */
  stop(): void;
}

const RESOLUTION_MS = 10;

/**
 * Measures event-loop delay the way Fastify's `under-pressure` does (perf_hooks
 * `monitorEventLoopDelay`, mean per sample window, minus the histogram's resolution), plus two
 * cheap checks that see a stall before the next sample: how late the sampling timer itself fired,
 * and, while a request is handled, how overdue that timer is now. So the first requests read after
 * a stall are already shed, not only those after the next sample.
 */
export function eventLoopPressure(options: { readonly sampleIntervalMs?: number } = {}): EventLoopPressure {
  // 50 ms, not under-pressure's 250 ms: a timer that fires once per window only sees a stall as
  // (stall − window) late, so with 250 ms a loop that gets a turn every 300 ms looked 50 ms late and
  // nothing was shed (the shed test failed on a quiet machine; the histogram's own sample can land
  // after this timer's read). Twenty wake-ups a second cost nothing measurable.
  const intervalMs = options.sampleIntervalMs ?? 50;
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  let lastTick = performance.now();
  let sampled = 0;
  let elu = performance.eventLoopUtilization();
  let utilization = 0;
  // The weight of one window in a moving average over about a quarter of a second.
  const alpha = Math.min(1, intervalMs / 250);
  const timer = setInterval(() => {
    const now = performance.now();
    const late = now - lastTick - intervalMs;
    lastTick = now;
    const next = performance.eventLoopUtilization();
    utilization += alpha * (performance.eventLoopUtilization(next, elu).utilization - utilization);
    elu = next;
    const mean = Number.isFinite(histogram.mean) ? histogram.mean / 1e6 - RESOLUTION_MS : 0;
    histogram.reset();
    sampled = Math.max(0, late, mean);
  }, intervalMs);
  timer.unref();
  return {
    delayMs: () => Math.max(sampled, performance.now() - lastTick - intervalMs),
    utilization: () => utilization,
    stop() {
      clearInterval(timer);
      histogram.disable();
    },
  };
}

/**
 * Load shedding when the process itself is the bottleneck (CPU starvation, a long synchronous
 * task): while the event loop runs more than `maxDelayMs` late, every request is answered at once
 * with 503 `overloaded` and a `Retry-After` of the delay in whole seconds (1–10), before request
 * ids, logging, authentication or body parsing. Mounted first on the public app.
 *
 * With `maxUtilization` (0–1) also while the loop is busier than that (the process has more work
 * than CPU: its answers queue in the kernel although each loop turn is short), with Retry-After 1.
 * An accepted enqueue costs ~10× a shed answer, so shedding them keeps the answers flowing.
 *
 * With `cors` (NOTIFY_CORS_ORIGINS; cors.ts, `earlyCors`) a shed answer carries the CORS headers,
 * which the middleware that writes them has not run yet, and a CORS preflight is never shed: a
 * browser reads a preflight's 503 as a network error, so it goes on to be answered 204 and the
 * request it announces is the one shed, readably.
 */
export function shedOnEventLoopDelay(
  pressure: EventLoopPressure,
  maxDelayMs: number,
  onShed: (reason: ShedReason) => void,
  maxUtilization?: number,
  cors?: EarlyCors,
): MiddlewareHandler<AppEnv> {
  if (!Number.isFinite(maxDelayMs) || maxDelayMs <= 0) throw new RangeError(`maxEventLoopDelayMs must be > 0, got ${maxDelayMs}`);
  if (maxUtilization !== undefined && !(maxUtilization > 0 && maxUtilization <= 1))
    throw new RangeError(`maxEventLoopUtilization must be in (0, 1], got ${maxUtilization}`);
  return async (c, next) => {
    if (cors?.isPreflight(c)) return next();
    const delay = pressure.delayMs();
    if (delay > maxDelayMs) {
      onShed('event_loop_delay');
      const retryAfter = String(Math.min(10, Math.max(1, Math.ceil(delay / 1000))));
      const detail = `event loop ${Math.round(delay)} ms late (limit ${maxDelayMs} ms); retry later`;
      return problemResponse(problem('overloaded', detail, {}, c.req.path), { ...cors?.headers(c), 'retry-after': retryAfter });
    }
    if (maxUtilization !== undefined) {
      const busy = pressure.utilization();
      if (busy > maxUtilization) {
        onShed('event_loop_utilization');
        const detail = `event loop busy ${Math.round(busy * 100)} % of the time (limit ${Math.round(maxUtilization * 100)} %); retry later`;
        return problemResponse(problem('overloaded', detail, {}, c.req.path), { ...cors?.headers(c), 'retry-after': '1' });
      }
    }
    return next();
  };
}
