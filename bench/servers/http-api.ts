// The server side of the `http-enqueue` scenario, in its own process: the real API (createApp,
// the same middleware, logger and metrics a deployment has) on @hono/node-server, plus one
// trivial route on the same app and server, the baseline. Reports its port over IPC; runs
// until SIGTERM.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createDb } from '@notify/runtime';
import { loadConfig } from '@notify/cli';
import { createApp, noMetrics } from '@notify/api';
import { createLogger } from '@notify/cli';
import { ROOT } from '../lib/root.js';

// @hono/node-server is a dependency of @notify/cli (which serves the API), not of the workspace root: resolve it from there.
const fromCli = createRequire(path.join(ROOT, 'packages', 'cli', 'package.json'));
type Serve = (
  options: { fetch: (request: Request) => Response | Promise<Response>; port: number; hostname: string },
  listening: (info: { port: number }) => void,
) => { close(): void };
const { serve } = (await import(pathToFileURL(fromCli.resolve('@hono/node-server')).href)) as { serve: Serve };

const config = loadConfig(process.env);
const db = createDb({
  connectionString: config.databaseUrl,
  max: Number(process.env.BENCH_DB_POOL ?? 10),
  applicationName: 'notify-bench-api',
});
const logger = createLogger({ level: config.logLevel, base: { role: 'api' } });
// As `notify start` builds it: the API-key cache of NOTIFY_API_KEY_CACHE_MS (default 5 s),
// and the group commit of POST /v1/notifications (NOTIFY_API_GROUP_COMMIT, NOTIFY_API_GROUP_COMMIT_IN_FLIGHT).
// Groups are counted for the scenario's "statements per request" (asked over IPC: `stats`).
const groups = { statements: 0, requests: 0 };
const metrics = {
  ...noMetrics,
  observeEnqueueGroup(size: number) {
    groups.statements++;
    groups.requests += size;
  },
};
const app = createApp({ db, config, logger, metrics, apiKeyCacheMs: config.apiKeyCacheMs, enqueueGroup: config.apiGroupCommit });
process.on('message', (m: { type?: string }) => {
  if (m?.type === 'stats') process.send?.({ type: 'stats', ...groups });
});

/** The baseline: same app, same middleware (request id, request log line, HTTP metrics), no auth, no database. */
app.post('/bench/noop', async (c) => {
  const body = await c.req.json();
  return c.json({ ok: typeof body === 'object' }, 202);
});

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
  process.send?.({ type: 'listening', port: info.port });
});

process.once('SIGTERM', () => {
  server.close();
  void db.destroy().finally(() => process.exit(0));
});
