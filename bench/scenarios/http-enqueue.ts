import os from 'node:os';
import autocannon from 'autocannon';
import pg from 'pg';
import { generateApiKey, hashApiKey } from '@notify/api';
import { cpuPerUnit, cpuSnapshot } from '../lib/cpu-meter.js';
import type { Figure } from '../lib/report.js';
import { ORDER_DATA } from '../lib/load.js';
import { type NodeChild, startNode } from '../lib/process.js';
import { median, pairedRatio } from '../lib/stats.js';
import type { Scenario } from './types.js';
import { benchPool } from '../lib/pool.js';

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

/** The alternating rounds of one request body: the API's and the trivial route's, and the API's costs. */
interface Rounds {
  readonly api: Round[];
  readonly noop: Round[];
  readonly costs: RoundCost[];
  readonly noopCpuMs: number[];
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

/** The median round's figures of one body (`suffix` '' or '_data'; `what` names the body in the labels). */
function bodyFigures(r: Rounds, suffix: string, what: string): Figure[] {
  return [
    {
      id: `rps${suffix}`,
      label: `POST /v1/notifications${what} req/s, ${CONNECTIONS} conn`,
      value: median(r.api.map((x) => x.rps)),
      unit: '/s',
      baseline: { label: 'trivial route', value: median(r.noop.map((x) => x.rps)) },
      ratio: pairedRatio(
        r.api.map((x) => x.rps),
        r.noop.map((x) => x.rps),
      ),
      targets: [{ on: 'ratio', op: '>=', value: 0.5 }],
    },
    {
      id: `p50${suffix}`,
      label: `POST /v1/notifications${what} p50`,
      value: median(r.api.map((x) => x.p50)),
      unit: 'ms',
      baseline: { label: 'trivial route', value: median(r.noop.map((x) => x.p50)) },
    },
    {
      id: `p99${suffix}`,
      label: `POST /v1/notifications${what} p99`,
      value: median(r.api.map((x) => x.p99)),
      unit: 'ms',
      baseline: { label: 'trivial route', value: median(r.noop.map((x) => x.p99)) },
      targets: [{ on: 'value', op: '<=', value: 50 }],
    },
    {
      id: `api_cpu${suffix}`,
      label: `API process CPU per POST${what}`,
      value: median(r.costs.map((c) => c.apiCpuMs)),
      unit: 'ms',
      baseline: { label: 'trivial route', value: median(r.noopCpuMs) },
    },
    {
      id: `pg_cpu${suffix}`,
      label: `PostgreSQL backend CPU per POST${what}`,
      value: median(r.costs.map((c) => c.postgresCpuMs)),
      unit: 'ms',
    },
    {
      id: `statements${suffix}`,
      label: `enqueue statements (transactions) per POST${what} (group commit, NOTIFY_API_GROUP_COMMIT)`,
      value: median(r.costs.map((c) => c.statements)),
      unit: '',
    },
  ];
}

/**
 * POST /v1/notifications (bearer auth, body validation, enqueue with group commit) at 16 connections with autocannon, against a trivial route (parses the JSON, answers 202) on
 * the same app, server and process. The server runs in a child process; autocannon runs here.
 * Rounds alternate; each figure is the median round. Then the same with a body that carries
 * `data` (template variables, as most callers send), against the trivial route given that body.
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
    const statsPool = benchPool(db.url, 1);
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
      const request = { channel: 'webhook', to: 'https://hooks.example.com/orders', body: 'Your order has shipped.' };
      const body = JSON.stringify(request);
      const withData = JSON.stringify({ ...request, data: ORDER_DATA });
      const rounds = ctx.quick ? 1 : 3;
      const seconds = ctx.quick ? 2 : 8;
      ctx.log(`http-enqueue: server on ${base}; ${rounds} rounds × ${seconds} s per route and body, ${CONNECTIONS} connections`);
      const parts = { service: server.pid, database: db.name, admin: statsPool };
      const measure = async (payload: string): Promise<Rounds> => {
        await hammer(`${base}/bench/noop`, headers, payload, 1);
        await hammer(`${base}/v1/notifications`, headers, payload, 1);
        const r: Rounds = { api: [], noop: [], costs: [], noopCpuMs: [] };
        for (let i = 0; i < rounds; i++) {
          const order = i % 2 === 0 ? (['noop', 'api'] as const) : (['api', 'noop'] as const);
          for (const which of order) {
            const before = { cpu: await cpuSnapshot(parts), groups: await groupStats(server) };
            const round = await hammer(`${base}${which === 'api' ? '/v1/notifications' : '/bench/noop'}`, headers, payload, seconds);
            if (which === 'noop') {
              r.noopCpuMs.push(cpuPerUnit(before.cpu, await cpuSnapshot(parts), round.answered, os.availableParallelism()).serviceMs);
            } else {
              const groups = await groupStats(server);
              const cpu = cpuPerUnit(
                before.cpu,
                await cpuSnapshot(parts),
                groups.requests - before.groups.requests,
                os.availableParallelism(),
              );
              r.costs.push({
                apiCpuMs: cpu.serviceMs,
                postgresCpuMs: cpu.postgresMs,
                statements: (groups.statements - before.groups.statements) / Math.max(1, groups.requests - before.groups.requests),
              });
            }
            if (round.non2xx > 0 || round.errors > 0) {
              throw new Error(`${which}: ${round.non2xx} non-2xx responses and ${round.errors} errors; see ${server.logFile}`);
            }
            (which === 'api' ? r.api : r.noop).push(round);
          }
        }
        return r;
      };
      const plain = await measure(body);
      const data = await measure(withData);
      const peak = await server.stop();
      const figures: Figure[] = [...bodyFigures(plain, '', ''), ...bodyFigures(data, '_data', ' with data')];
      return {
        figures,
        peakRss: { 'API server process': peak },
        details: { connections: CONNECTIONS, seconds, ...plain, withData: data },
      };
    } finally {
      await server.stop();
      await statsPool.end();
      await db.drop();
    }
  },
};
