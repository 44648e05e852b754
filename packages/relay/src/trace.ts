import { appendFileSync } from 'node:fs';
import { PerformanceObserver, performance } from 'node:perf_hooks';

/**
 * Diagnostic trace of the publish loop, off unless NOTIFY_RELAY_TRACE names a file: one JSON
 * line per event with `t`, the wall-clock time in milliseconds (fractional). Buffered in memory
 * and appended every 200 ms, so the loop pays one array push per event.
 */
const path = process.env.NOTIFY_RELAY_TRACE;
let buffer: string[] = [];
let timer: NodeJS.Timeout | null = null;

const flush = () => {
  if (!path || buffer.length === 0) return;
  const lines = buffer;
  buffer = [];
  appendFileSync(path, lines.join('\n') + '\n');
};

/** True when tracing is on. */
export const tracing = path !== undefined && path !== '';

/** Records one event (a no-op unless tracing). */
export function trace(event: Record<string, unknown>): void {
  if (!tracing) return;
  buffer.push(JSON.stringify({ t: performance.timeOrigin + performance.now(), ...event }));
  if (!timer) {
    timer = setInterval(flush, 200);
    timer.unref();
    process.on('exit', flush);
  }
}

if (tracing) {
  // GC pauses hold the loop: record each with its start and duration.
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      buffer.push(
        JSON.stringify({
          t: performance.timeOrigin + e.startTime,
          e: 'gc',
          ms: e.duration,
          kind: (e as unknown as { detail?: { kind?: number } }).detail?.kind,
        }),
      );
    }
  }).observe({ entryTypes: ['gc'] });
}

/** The transactions holding the snapshot's xmin back, oldest first (for a held-back claim). */
export const HOLDERS_SQL = `SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin,
  (SELECT coalesce(json_agg(h), '[]') FROM (
     SELECT pid, backend_xid::text AS xid, application_name AS app, datname AS db, state, left(query, 100) AS q,
            extract(epoch FROM xact_start) * 1000 AS xs, extract(epoch FROM state_change) * 1000 AS sc
       FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()
      ORDER BY age(backend_xid) DESC LIMIT 4) h) AS holders`;
