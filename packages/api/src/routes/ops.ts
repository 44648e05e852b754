import { Hono } from 'hono';
import { type Logger, withTimeout } from '@notify/runtime';
import type { AppEnv } from '../env.js';
import type { HttpMetrics } from '../metrics.js';
import { ProblemError } from '../problem.js';

/** A readiness check: resolves when the dependency answers, rejects (or times out) when it does not. */
export type ReadinessCheck = () => Promise<void>;

/** What the operational routes need. */
export interface OpsRoutesDeps {
  readonly metrics: HttpMetrics;
  readonly logger: Logger;
  /** By name, e.g. `{ database, kafka }`. Every one must pass for /readyz to be 200. */
  readonly readiness: Readonly<Record<string, ReadinessCheck>>;
  /** A check that has not answered after this long counts as failed. Default 2000. */
  readonly readinessTimeoutMs?: number;
}

/**
 * `GET /healthz` (the process is up: always 200 while it serves), `GET /readyz` (every readiness
 * check passes: 200, else a 503 problem listing which failed) and `GET /metrics` (Prometheus text).
 * None needs an API key: they are for load balancers and scrapers on the internal network.
 */
export function opsRoutes(deps: OpsRoutesDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const timeoutMs = deps.readinessTimeoutMs ?? 2_000;

  app.get('/healthz', (c) => c.json({ status: 'ok' as const }));

  app.get('/readyz', async (c) => {
    const entries = Object.entries(deps.readiness);
    const results = await Promise.all(
      entries.map(async ([name, check]) => {
        try {
          await withTimeout(check(), timeoutMs, () => new Error(`no answer within ${timeoutMs} ms`));
          return [name, 'ok'] as const;
        } catch (err) {
          deps.logger.warn({ check: name, err: (err as Error).message }, 'readiness check failed');
          return [name, 'unavailable'] as const;
        }
      }),
    );
    const checks = Object.fromEntries(results);
    const failed = results.filter(([, s]) => s !== 'ok').map(([n]) => n);
    if (failed.length > 0) {
      throw new ProblemError('not_ready', `not reachable: ${failed.join(', ')}`, {
        extensions: { checks },
        headers: { 'retry-after': '5' },
      });
    }
    return c.json({ status: 'ok' as const, checks });
  });

  app.get('/metrics', async (c) => {
    const text = await deps.metrics.render();
    return c.body(text, 200, { 'content-type': deps.metrics.contentType });
  });

  return app;
}
