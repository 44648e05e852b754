import os from 'node:os';
import autocannon from 'autocannon';
import pg from 'pg';
import { generateApiKey, hashApiKey } from '@notify/api';
import { cpuPerUnit, cpuSnapshot } from '../lib/cpu-meter.js';
import type { Figure } from '../lib/report.js';
import { type NodeChild, startNode } from '../lib/process.js';
import { median, pairedRatio } from '../lib/stats.js';
import type { Scenario } from './types.js';

const CONNECTIONS = 16;

interface Round {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly non2xx: number;
  readonly errors: number;
  /** 2xx responses of the round. */
  readonly answered: number;
}

/** Per POST of one round: CPU of the API process and of the database's backends, and enqueue statements (group commit). */
interface RoundCost {
  readonly apiCpuMs: number;
  readonly postgresCpuMs: number;
  readonly statements: number;
}

interface GroupStats {
  readonly type: 'stats';
  readonly statements: number;
  readonly requests: number;
}

async function groupStats(server: NodeChild): Promise<GroupStats> {
  const reply = server.message((m): m is GroupStats => (m as { type?: string })?.type === 'stats', 10_000);
  server.process.send({ type: 'stats' });
  return reply;
}

async function hammer(url: string, headers: Record<string, string>, body: string, seconds: number): Promise<Round> {
  const result = await autocannon({ url, method: 'POST', headers, body, connections: CONNECTIONS, duration: seconds });
  return {
    rps: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    answered: result['2xx'],
  };
}

/**
 * POST /v1/notifications (bearer auth, body validation, enqueue with group commit) at 16 connections with autocannon, against a trivial route (parses the JSON, answers 202) on
 * the same app, server and process. The server runs in a child process; autocannon runs here.
 * Rounds alternate; each figure is the median round.
 */
export const httpEnqueueScenario: Scenario = {
  name: 'http-enqueue',
  description: `POST /v1/notifications vs a trivial Hono route on the same server (${CONNECTIONS} connections, autocannon)`,
  needsKafka: false,
  async run(ctx) {
    const db = await ctx.stack.freshDatabase('http_enqueue');
    const { id, key } = generateApiKey();
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      await admin.query('INSERT INTO api_keys (id, tenant_id, key_hash, name) VALUES ($1, $2, $3, $4)', [
        id,
        'bench',
        hashApiKey(key),
        'bench',
      ]);
    } finally {
      await admin.end();
    }
    const statsPool = new pg.Pool({ connectionString: db.url, max: 1 });
    const server = startNode({
      name: 'http-api',
      script: 'bench/servers/http-api.ts',
      ipc: true,
      env: { DATABASE_URL: db.url, LOG_LEVEL: 'info', PORT: '0', ...ctx.serviceEnv },
      profileDir: ctx.cpuProfDir,
    });
    try {
      const { port } = await server.message(
        (m): m is { type: 'listening'; port: number } => (m as { type?: string })?.type === 'listening',
        60_000,
      );
      const base = `http://127.0.0.1:${port}`;
      const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
      const body = JSON.stringify({ channel: 'webhook', to: 'https://hooks.example.com/orders', body: 'Your order has shipped.' });
      const rounds = ctx.quick ? 1 : 3;
      const seconds = ctx.quick ? 2 : 8;
      ctx.log(`http-enqueue: server on ${base}; ${rounds} rounds × ${seconds} s per route, ${CONNECTIONS} connections`);
      await hammer(`${base}/bench/noop`, headers, body, 1);
      await hammer(`${base}/v1/notifications`, headers, body, 1);
      const api: Round[] = [];
      const noop: Round[] = [];
      const costs: RoundCost[] = [];
      const noopCpuMs: number[] = [];
      const parts = { service: server.pid, database: db.name, admin: statsPool };
      for (let r = 0; r < rounds; r++) {
        const order = r % 2 === 0 ? (['noop', 'api'] as const) : (['api', 'noop'] as const);
        for (const which of order) {
          const before = { cpu: await cpuSnapshot(parts), groups: await groupStats(server) };
          const round = await hammer(`${base}${which === 'api' ? '/v1/notifications' : '/bench/noop'}`, headers, body, seconds);
          if (which === 'noop') {
            noopCpuMs.push(cpuPerUnit(before.cpu, await cpuSnapshot(parts), round.answered, os.availableParallelism()).serviceMs);
          } else {
            const groups = await groupStats(server);
            const cpu = cpuPerUnit(
              before.cpu,
              await cpuSnapshot(parts),
              groups.requests - before.groups.requests,
              os.availableParallelism(),
            );
            costs.push({
              apiCpuMs: cpu.serviceMs,
              postgresCpuMs: cpu.postgresMs,
              statements: (groups.statements - before.groups.statements) / Math.max(1, groups.requests - before.groups.requests),
            });
          }
          if (round.non2xx > 0 || round.errors > 0) {
            throw new Error(`${which}: ${round.non2xx} non-2xx responses and ${round.errors} errors; see ${server.logFile}`);
          }
          (which === 'api' ? api : noop).push(round);
        }
      }
      const peak = await server.stop();
      const figures: Figure[] = [
        {
          id: 'rps',
          label: `POST /v1/notifications req/s, ${CONNECTIONS} conn`,
          value: median(api.map((r) => r.rps)),
          unit: '/s',
          baseline: { label: 'trivial route', value: median(noop.map((r) => r.rps)) },
          ratio: pairedRatio(
            api.map((r) => r.rps),
            noop.map((r) => r.rps),
          ),
          targets: [{ on: 'ratio', op: '>=', value: 0.5 }],
        },
        {
          id: 'p50',
          label: 'POST /v1/notifications p50',
          value: median(api.map((r) => r.p50)),
          unit: 'ms',
          baseline: { label: 'trivial route', value: median(noop.map((r) => r.p50)) },
        },
        {
          id: 'p99',
          label: 'POST /v1/notifications p99',
          value: median(api.map((r) => r.p99)),
          unit: 'ms',
          baseline: { label: 'trivial route', value: median(noop.map((r) => r.p99)) },
          targets: [{ on: 'value', op: '<=', value: 50 }],
        },
        {
          id: 'api_cpu',
          label: 'API process CPU per POST',
          value: median(costs.map((c) => c.apiCpuMs)),
          unit: 'ms',
          baseline: { label: 'trivial route', value: median(noopCpuMs) },
        },
        {
          id: 'pg_cpu',
          label: 'PostgreSQL backend CPU per POST',
          value: median(costs.map((c) => c.postgresCpuMs)),
          unit: 'ms',
        },
        {
          id: 'statements',
          label: 'enqueue statements (transactions) per POST (group commit, NOTIFY_API_GROUP_COMMIT)',
          value: median(costs.map((c) => c.statements)),
          unit: '',
        },
      ];
      return {
        figures,
        peakRss: { 'API server process': peak },
        details: { connections: CONNECTIONS, seconds, api, noop, costs, noopCpuMs },
      };
    } finally {
      await server.stop();
      await statsPool.end();
      await db.drop();
    }
  },
};
