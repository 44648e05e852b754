import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type KafkaMessage } from 'kafkajs';
import pg from 'pg';
import { HEADERS, TOPICS, topicName } from '@notify/contract';
import { withDatabase } from '@notify/migrations';
import { startPrivateKafka, stopPrivateKafka } from '../../../scripts/kafka.mjs';
import type { PrivatePostgres } from './private-postgres.js';
import type { ReceiverBehaviour, ReceiverRequest } from './receiver.js';
import { type Scenario, type ScenarioContext, type StackProcess, strikePoints } from './scenario.js';

// The scenario catalogue: each builder returns a `Scenario` sized by its caller, so the fast CI
// subset (test/faults) and the full suite (test/chaos) run the same code at different sizes.

export const RELAY: StackProcess = { name: 'relay', roles: ['relay'] };
export const DISPATCHER: StackProcess = { name: 'dispatcher', roles: ['dispatcher'] };

/** Sizes every builder takes. */
export interface Size {
  readonly notifications: number;
  readonly spreadMs: number;
  readonly seed: number;
}

/** Waits until `fraction` of the load is enqueued. */
export function atProgress(ctx: ScenarioContext, fraction: number): Promise<void> {
  // The load reaches `fraction` after about fraction × spreadMs: a fixed 120 s failed the 5-minute
  // Kafka outage (3,600 over 360 s) whenever its seed drew more than a third (chaos run of
  // 2026-12-02 02:17 UTC: "waiting for 37% of the load enqueued").
  const timeoutMs = 120_000 + fraction * ctx.spreadMs;
  return ctx.until(
    () => ctx.enqueued() >= Math.ceil(ctx.total * fraction),
    `${Math.round(fraction * 100)}% of the load enqueued`,
    timeoutMs,
  );
}

/** Waits until `fraction` of the load has reached the receiver. */
function atDelivered(ctx: ScenarioContext, fraction: number): Promise<void> {
  return ctx.until(
    () => ctx.receiver.acceptedIds.size >= Math.ceil(ctx.total * fraction),
    `${Math.round(fraction * 100)}% of the load delivered`,
    180_000,
  );
}

/**
 * SIGKILL the relay (or the dispatcher) `rounds` times, each at a seeded point of *delivery*
 * progress (so every kill lands while the stack is busy, also after a previous restart), then
 * restart it. For the relay, the load goes on a little while it is down, so rows pile up in the
 * outbox first. Relay and dispatcher run in separate processes.
 */
export function sigkillScenario(role: 'relay' | 'dispatcher', rounds: number, size: Size): Scenario {
  return {
    name: `SIGKILL ${role} ×${rounds}`,
    ...size,
    processes: [RELAY, DISPATCHER],
    async fault(ctx) {
      const points = strikePoints(ctx.random, rounds, 0.05, 0.75);
      let deliveredAtRestart = 0;
      for (const [i, p] of points.entries()) {
        // Never strike a process that has not delivered anything since its restart: 3% of the load
        // at least. But never ask for more than the whole load: on a loaded machine a late restart
        // can find everything delivered already, and "103 % delivered" would wait until the
        // deadline (CHAOS_SEED=679905793 under a concurrent scripts/test.sh). Then it strikes an idle stack.
        const target = deliveredAtRestart / ctx.total + 0.03;
        if (target > 1) ctx.note(`strike ${i + 1}: ${deliveredAtRestart} of ${ctx.total} delivered already; striking an idle ${role}`);
        await atDelivered(ctx, Math.min(1, Math.max(p, target)));
        const pileUp =
          role === 'relay' ? () => atProgress(ctx, Math.min(1, ctx.enqueued() / ctx.total + 0.02 + ctx.random() * 0.05)) : undefined;
        await ctx.killAndRestart(role, pileUp);
        deliveredAtRestart = ctx.receiver.acceptedIds.size;
      }
    },
  };
}

/**
 * Receivers that misbehave, chosen per notification by a hash of its id (so the split is stable
 * across retries): some hang past the send timeout once, some reset the connection twice, some
 * answer slowly but in time, and some answer slowly *past* the timeout once — the receiver
 * processed the request, the sender never heard, so it retries: the one source of duplicates here.
 */
export function hostileReceiverScenario(size: Size): Scenario {
  const kindOf = (id: string) => {
    const h = [...id].reduce((a, c) => (a * 31 + c.charCodeAt(0)) >>> 0, 7) % 100;
    return h < 10 ? 'hang' : h < 20 ? 'reset' : h < 30 ? 'slow' : h < 35 ? 'late' : 'ok';
  };
  return {
    name: 'receivers: hang, reset, slow',
    ...size,
    processes: [{ name: 'stack', roles: ['relay', 'dispatcher'] }],
    // Send timeout 1 s: 'hang' is cut by it, 'slow' (300 ms) is not, 'late' (1.5 s) is.
    env: { NOTIFY_SEND_TIMEOUT_MS: '1000' },
    behaviour: (req: ReceiverRequest): ReceiverBehaviour => {
      const kind = kindOf(req.webhookId);
      if (kind === 'hang' && req.seen === 0) return { kind: 'hang' };
      if (kind === 'reset' && req.seen < 2) return { kind: 'reset' };
      if (kind === 'slow') return { kind: 'slow', delayMs: 300 };
      if (kind === 'late' && req.seen === 0) return { kind: 'slow', delayMs: 1500 };
      return { kind: 'ok' };
    },
  };
}

/** Waits until the receiver gets a delivery after `since` and notes how long that took. */
async function noteResumed(ctx: ScenarioContext, since: number, after: string): Promise<void> {
  await ctx.until(() => ctx.receiver.deliveries.some((d) => d.at.getTime() > since), `a delivery after ${after}`, 120_000);
  const first = Math.min(...ctx.receiver.deliveries.filter((d) => d.at.getTime() > since).map((d) => d.at.getTime()));
  ctx.note(`delivering again ${((first - since) / 1000).toFixed(1)} s after ${after}`);
}

/**
 * Failover: two dispatchers share the partitions, one is SIGKILLed at a seeded point of delivery
 * progress and stays dead. Its partitions stay with it until the group coordinator drops it
 * (the Kafka session timeout, NOTIFY_KAFKA_SESSION_TIMEOUT_MS), then move to the survivor. The
 * timeline notes how long until every key (receiver path) was delivered again.
 */
export function failoverScenario(size: Size): Scenario {
  const lastByPath = new Map<string, number>();
  return {
    name: 'failover: SIGKILL 1 of 2 dispatchers',
    ...size,
    processes: [RELAY, DISPATCHER, { name: 'dispatcher-2', roles: ['dispatcher'] }],
    behaviour: (req) => {
      lastByPath.set(req.path, Date.now());
      return { kind: 'ok' };
    },
    async fault(ctx) {
      await atDelivered(ctx, 0.2 + ctx.random() * 0.2);
      const paths = [...lastByPath.keys()];
      await ctx.kill('dispatcher');
      const killedAt = Date.now();
      await noteResumed(ctx, killedAt, 'the kill');
      await ctx.until(() => paths.every((p) => (lastByPath.get(p) ?? 0) > killedAt), 'every key delivered again', 120_000);
      ctx.note(`every one of ${paths.length} keys delivered again ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`);
    },
  };
}

/**
 * A consumer group rebalance during delivery: one dispatcher at first, a second and a third
 * join at seeded moments, then the first leaves (SIGTERM, a graceful stop).
 */
export function rebalanceScenario(size: Size): Scenario {
  return {
    name: 'rebalance: +2 dispatchers, −1',
    ...size,
    processes: [RELAY, DISPATCHER],
    async fault(ctx) {
      const [a, b, c] = strikePoints(ctx.random, 3, 0.15, 0.85) as [number, number, number];
      await atProgress(ctx, a);
      await ctx.start({ name: 'dispatcher-2', roles: ['dispatcher'] });
      await atProgress(ctx, b);
      await ctx.start({ name: 'dispatcher-3', roles: ['dispatcher'] });
      await atProgress(ctx, c);
      // A graceful leave: it finishes or abandons its in-flight deliveries and exits 0.
      const code = await ctx.stop('dispatcher');
      if (code !== 0) throw new Error(`the dispatcher exited with ${code} on SIGTERM`);
    },
  };
}

/**
 * `pg_terminate_backend` on every connection of the service (application_name notify-*, in this
 * scenario's database only: other tests' sessions, and this test's own (notify-test), are never
 * touched), `rounds` times at seeded moments of the load: the API, relay (its pool and its LISTEN
 * connection) and dispatcher must all reconnect by themselves.
 */
export function pgTerminateScenario(rounds: number, size: Size): Scenario {
  return {
    name: `pg_terminate_backend ×${rounds}`,
    ...size,
    // One process per role, so a crash names its role.
    processes: [{ name: 'api', roles: ['api'] }, RELAY, DISPATCHER],
    async fault(ctx) {
      const points = strikePoints(ctx.random, rounds, 0.1, 0.9);
      const service = `datname = current_database() AND application_name LIKE 'notify-%' AND application_name <> 'notify-test'`;
      for (const p of points) {
        await atProgress(ctx, p);
        // Strike a stack that is up: every role connected (after a crash, the restarted process must reconnect first).
        await ctx.until(
          async () => {
            const { rows } = await ctx.db.pool.query<{ n: number }>(
              `SELECT count(DISTINCT application_name)::int AS n FROM pg_stat_activity WHERE ${service}`,
            );
            return rows[0]!.n >= 3;
          },
          'the service connected again',
          90_000,
        );
        const { rows } = await ctx.db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM (
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE ${service} AND pid <> pg_backend_pid()
           ) t`,
        );
        ctx.note(`terminated ${rows[0]!.n} service connections`);
      }
    },
  };
}

/**
 * A transaction that holds an xid stays open for `holdMs` from 10 % of the load, in another
 * database of the same server (the `postgres` database): it holds back the server-wide xmin the
 * relay's snapshot rule waits for. With the bounded order wait the relay keeps publishing, and
 * when the transaction ends nothing is missing.
 */
export function longTransactionScenario(holdMs: number, size: Size): Scenario {
  return {
    name: `a ${Math.round(holdMs / 1000)} s transaction open elsewhere on the server`,
    ...size,
    processes: [{ name: 'api', roles: ['api'] }, RELAY, DISPATCHER],
    async fault(ctx) {
      await atProgress(ctx, 0.1);
      const holder = new pg.Client({ connectionString: withDatabase(ctx.db.url, 'postgres'), application_name: 'notify-test-long-tx' });
      holder.on('error', () => {});
      await holder.connect();
      try {
        await holder.query('BEGIN');
        const { rows } = await holder.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid');
        ctx.note(`opened a transaction holding xid ${rows[0]!.xid} in database postgres`);
        const openedAt = Date.now();
        const delivered = ctx.receiver.acceptedIds.size;
        // Deliveries go on while it is open (the relay does not wait for it beyond the bound).
        await ctx.until(
          () => ctx.receiver.acceptedIds.size >= delivered + Math.min(100, ctx.total - delivered),
          'deliveries while the transaction is open',
          holdMs,
        );
        ctx.note(`${ctx.receiver.acceptedIds.size - delivered} delivered while it was open`);
        await ctx.until(() => Date.now() - openedAt >= holdMs, `the transaction open for ${holdMs} ms`, holdMs + 10_000);
        await holder.query('COMMIT');
        ctx.note('committed it');
      } finally {
        await holder.end().catch(() => {});
      }
    },
  };
}

/**
 * The Kafka broker stops for `outageMs` mid-run and starts again (a PRIVATE broker, on its kept
 * data and port: the shared one is never stopped). Enqueue goes on meanwhile: it never depends
 * on Kafka.
 */
export function kafkaOutageScenario(
  outageMs: number,
  size: Size & { readonly brokerName: string; readonly brokers: readonly string[] },
): Scenario {
  return {
    name: `Kafka down ${Math.round(outageMs / 1000)} s`,
    ...size,
    brokers: size.brokers,
    processes: [RELAY, DISPATCHER],
    settleTimeoutMs: 120_000,
    async fault(ctx) {
      await atProgress(ctx, 0.2 + ctx.random() * 0.2);
      await stopPrivateKafka({ name: size.brokerName, keepData: true, log: () => {} });
      ctx.note('broker stopped');
      const down = Date.now();
      const enqueuedAtStop = ctx.enqueued();
      // The outage is a duration by definition; waitFor on the clock keeps the one waiting primitive.
      await ctx.until(() => Date.now() - down >= outageMs, `${outageMs} ms of outage`, outageMs + 10_000);
      ctx.note(`broker starting again; ${ctx.enqueued() - enqueuedAtStop} enqueued while it was down`);
      await startPrivateKafka({ name: size.brokerName, keepData: true, log: () => {} });
      ctx.note('broker back');
      await noteResumed(ctx, Date.now(), 'the broker is back');
    },
  };
}

/** The key the PostgreSQL-restart scenario's API seeds (tenant `chaos`). */
export const PROBE_KEY = 'chaos-probe-key-0123456789abcdef';

/** One request to the API while PostgreSQL was down: what came back, and how fast. */
export interface OutageProbe {
  /** HTTP status, or 0 when no answer came within 5 s (a hang) or the connection failed. */
  readonly status: number;
  readonly contentType: string;
  /** The problem's `code`, if the body was one. */
  readonly code: string | undefined;
  readonly retryAfter: string | null;
  readonly ms: number;
}

/** A GET of an unknown notification with `PROBE_KEY`: 404 when the API and its database are up. */
export async function probeApi(url: string): Promise<OutageProbe> {
  const t0 = Date.now();
  try {
    // A lookup (not a POST: every notification of the run must be one the load enqueued): the key
    // check and the read both need the database.
    const res = await fetch(`${url}/v1/notifications/ntf_01JZZZZZZZZZZZZZZZZZZZZZZZ`, {
      headers: { authorization: `Bearer ${PROBE_KEY}` },
      signal: AbortSignal.timeout(5_000),
    });
    const text = await res.text();
    let code: string | undefined;
    try {
      code = (JSON.parse(text) as { code?: string }).code;
    } catch {
      code = undefined;
    }
    return {
      status: res.status,
      contentType: res.headers.get('content-type') ?? '',
      code,
      retryAfter: res.headers.get('retry-after'),
      ms: Date.now() - t0,
    };
  } catch {
    return { status: 0, contentType: '', code: undefined, retryAfter: null, ms: Date.now() - t0 };
  }
}

/**
 * The PostgreSQL server stops (`pg_ctl stop -m fast`: every connection cut, new ones refused) for
 * `downMs` mid-run, then starts again on its data: a PRIVATE server (`startPrivatePostgres`),
 * never the machine's shared cluster. API, relay and dispatcher run in separate processes and
 * must reconnect by themselves (no restart by the harness: a crash fails the test). While it is
 * down the API is probed twice a second (`sink.probes`); afterwards the fault waits until the
 * API answers again, the relay publishes again and the dispatcher delivers again, and notes how
 * long each took. The load keeps trying to enqueue meanwhile, like a domain service would.
 */
export function postgresRestartScenario(
  downMs: number,
  size: Size & { readonly server: PrivatePostgres },
  sink: { probes?: OutageProbe[] },
): Scenario {
  return {
    name: `PostgreSQL down ${Math.round(downMs / 1000)} s`,
    ...size,
    databaseUrl: size.server.url,
    env: { NOTIFY_API_KEYS: `chaos:${PROBE_KEY}` },
    processes: [{ name: 'api', roles: ['api'] }, RELAY, DISPATCHER],
    settleTimeoutMs: 120_000,
    async fault(ctx) {
      await atProgress(ctx, 0.3 + ctx.random() * 0.2);
      const api = ctx.process('api').url;
      await size.server.stop();
      const down = Date.now();
      ctx.note('PostgreSQL stopped');
      const probes: OutageProbe[] = (sink.probes = []);
      while (Date.now() - down < downMs) {
        const next = Date.now() + 500;
        probes.push(await probeApi(api));
        await ctx.until(() => Date.now() >= next, 'the next probe', 10_000);
      }
      ctx.note(`${probes.length} API probes while down: ${[...new Set(probes.map((p) => `${p.status} ${p.code ?? ''}`))].join(', ')}`);
      await size.server.start();
      const up = Date.now();
      ctx.note('PostgreSQL started again');
      const since = () => `${((Date.now() - up) / 1000).toFixed(1)} s after the restart`;
      await Promise.all([
        ctx
          .until(async () => (await probeApi(api)).status === 404, 'the API answering again', 60_000)
          .then(() => ctx.note(`api answers again ${since()}`)),
        ctx
          .until(
            async () => {
              // A published delivery request leaves its record in outbox_published (migration 0280).
              const { rows } = await ctx.db.pool.query<{ n: number }>(
                'SELECT count(*)::int AS n FROM outbox_published WHERE published_at > $1',
                [new Date(up)],
              );
              return rows[0]!.n > 0;
            },
            'the relay publishing again',
            60_000,
          )
          .then(() => ctx.note(`relay publishes again ${since()}`)),
        ctx
          .until(() => ctx.receiver.deliveries.some((d) => d.at.getTime() > up), 'the dispatcher delivering again', 60_000)
          .then(() => ctx.note(`dispatcher delivers again ${since()}`)),
      ]);
    },
  };
}

const POISON_DUE = '2020-01-01T00:00:00.000Z';
const request = (over: Record<string, unknown>) =>
  Buffer.from(
    JSON.stringify({
      v: 1,
      type: 'notification.deliver',
      id: 'ntf_01JAAAAAAAAAAAAAAAAAAAAAAA',
      tenant_id: 'chaos',
      channel: 'webhook',
      attempt: 1,
      due_at: POISON_DUE,
      ...over,
    }),
  );

/** The poison messages `poisonScenario` injects (fixed bytes, so a test can compare them with the dead letters). */
export const POISON: readonly { readonly name: string; readonly value: Buffer | null; readonly headers?: Record<string, string> }[] = [
  { name: 'garbage bytes', value: randomBytes(512) },
  { name: 'invalid UTF-8', value: Buffer.from([0x7b, 0x22, 0x76, 0x22, 0x3a, 0xff, 0xfe, 0x7d]) },
  { name: 'not an object', value: Buffer.from('[1,2,3]') },
  { name: 'empty value', value: Buffer.alloc(0) },
  { name: 'null value (tombstone)', value: null },
  { name: 'wrong version', value: request({ v: 2 }) },
  { name: 'unknown notification', value: request({}) },
  { name: 'wrong type of attempt', value: request({ attempt: '1' }) },
  { name: 'huge value (900 KiB)', value: request({ id: `ntf_${'x'.repeat(900 * 1024)}` }) },
  { name: 'deeply nested JSON', value: Buffer.from(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) },
  {
    name: 'hostile headers',
    value: request({ id: 'ntf_01JBBBBBBBBBBBBBBBBBBBBBBB' }),
    headers: { [HEADERS.dueAt]: 'not-a-date', [HEADERS.attempt]: '-1', [HEADERS.notificationId]: '\u0000', [HEADERS.schemaVersion]: '999' },
  },
];

/**
 * Poison messages produced straight into `<prefix>.requests` and a retry topic, interleaved with
 * real traffic. The test then checks that each one is on `<prefix>.dlq` with a reason, and that
 * the dispatcher never exited (`ScenarioResult.crashed`) and delivered all the real ones.
 */
export function poisonScenario(size: Size, sink: { dlq?: KafkaMessage[] }): Scenario {
  return {
    name: 'poison messages → DLQ',
    ...size,
    processes: [RELAY, DISPATCHER],
    async fault(ctx) {
      const kafka = new Kafka({ clientId: 'chaos-poison', brokers: [...ctx.brokers], logLevel: logLevel.NOTHING });
      const producer = kafka.producer({ allowAutoTopicCreation: false });
      await producer.connect();
      try {
        const admin = kafka.admin();
        await admin.connect();
        const retryTopic = (await admin.listTopics()).find((t) => t.startsWith(`${ctx.prefix}.retry.`));
        await admin.disconnect();
        const targets = [topicName(ctx.prefix, TOPICS.requests), ...(retryTopic ? [retryTopic] : [])];
        for (const [i, p] of POISON.entries()) {
          await atProgress(ctx, 0.1 + (0.8 * i) / POISON.length);
          for (const topic of targets) {
            await producer.send({
              topic,
              messages: [{ key: `poison-${i}`, value: p.value, headers: { 'chaos-poison': p.name, ...p.headers } }],
            });
          }
          ctx.note(`poison: ${p.name} → ${targets.length} topics`);
        }
        sink.dlq = [];
        const expected = POISON.length * targets.length;
        const consumer = kafka.consumer({ groupId: `${ctx.prefix}.dlq-reader`, allowAutoTopicCreation: false });
        await consumer.connect();
        try {
          await consumer.subscribe({ topic: topicName(ctx.prefix, TOPICS.dlq), fromBeginning: true });
          const got = sink.dlq;
          await consumer.run({ eachMessage: async ({ message }) => void got.push(message) });
          await ctx.until(() => got.length >= expected, `${expected} dead letters`, 20_000).catch(() => {});
        } finally {
          await consumer.disconnect();
        }
      } finally {
        await producer.disconnect();
      }
    },
  };
}
