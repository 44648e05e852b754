/** Small statistics helpers for the bench: percentiles over recorded samples, medians of rounds. */
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** The q-quantile (0..1) of `samples` by the nearest-rank method; NaN for no samples. Does not modify the input. */
export function percentile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = Float64Array.from(samples).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

/** p50, p90, p99 and max of `samples` (milliseconds in, milliseconds out). */
export function latencySummary(samples: readonly number[]): { count: number; p50: number; p90: number; p99: number; max: number } {
  if (samples.length === 0) return { count: 0, p50: Number.NaN, p90: Number.NaN, p99: Number.NaN, max: Number.NaN };
  const sorted = Float64Array.from(samples).sort();
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
  return { count: sorted.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted[sorted.length - 1]! };
}

/** A process's event-loop delay over a stretch of work (ms, to 0.1 ms): how late its timer ticks ran. */
export interface LoopDelay {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** Runs `work` while sampling this process's event-loop delay (10 ms resolution). */
export async function withLoopDelay<T>(work: () => Promise<T>): Promise<{ result: T; loopDelayMs: LoopDelay }> {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  let result: T;
  try {
    result = await work();
  } finally {
    h.disable();
  }
  const ms = (ns: number) => Math.round((ns / 1e6) * 10) / 10;
  return { result, loopDelayMs: { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max) } };
}

/** The median of a few round results. */
export function median(values: readonly number[]): number {
  return percentile(values, 0.5);
}

/** The median of per-round ratios a[i] / b[i] (rounds run back to back, so drift between rounds cancels). */
export function pairedRatio(a: readonly number[], b: readonly number[]): number {
  return median(a.map((x, i) => x / b[i]!));
}

/** Rounds for display: 3 significant figures below 100, whole numbers above. */
export function round(n: number): number {
  if (!Number.isFinite(n)) return n;
  if (Math.abs(n) >= 100) return Math.round(n);
  return Number(n.toPrecision(3));
}

/** Waits `ms` milliseconds. Used only to pace load and sample meters, never to wait for a condition. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `condition` every `intervalMs` until it returns true or `timeoutMs` passes (then throws with `message`). */
export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  options: { timeoutMs: number; intervalMs?: number; message: string },
): Promise<void> {
  const deadline = performance.now() + options.timeoutMs;
  const interval = options.intervalMs ?? 50;
  for (;;) {
    if (await condition()) return;
    if (performance.now() > deadline) throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.message}`);
    await sleep(interval);
  }
}

/** Ids in enqueue order and each one's first arrival: how many arrived before one enqueued earlier (ids that never arrived are skipped). */
export function outOfOrder(ids: readonly string[], arrivals: ReadonlyMap<string, number>): number {
  let late = 0;
  let previous = -Infinity;
  for (const id of ids) {
    const at = arrivals.get(id);
    if (at === undefined) continue;
    if (at < previous) late++;
    previous = Math.max(previous, at);
  }
  return late;
}

/** The whole span a steady load is offered for: lead-in, measured span, lead-out. */
export function loadSpanMs(load: { readonly leadInMs?: number; readonly durationMs: number; readonly leadOutMs?: number }): number {
  return (load.leadInMs ?? 0) + load.durationMs + (load.leadOutMs ?? 0);
}

/**
 * Which offers of a steady load are measured: `offerAtRate` issues offer n once rate × elapsed
 * passes n, so the offers issued after `leadInMs` and before `leadInMs + durationMs` are
 * [first, end). The rest (lead-in, lead-out) keep the load steady around the measured span.
 */
export function measuredOffers(rate: number, leadInMs: number, durationMs: number): { first: number; end: number } {
  return { first: Math.floor((rate * leadInMs) / 1000), end: Math.floor((rate * (leadInMs + durationMs)) / 1000) };
}
