import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEADERS } from '@notify/contract';
import { enqueue, fromPgClient } from '@notify/outbox';
import { type HttpReceiver, startHttpReceiver } from '@notify/providers/testing';
import { runNotify } from '../src/main.js';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { createTestKafka, stopNotifyAndCloseKafka, type TestKafka } from '../../../test/support/kafka.js';
import { waitFor } from '../../../test/support/wait.js';
import { type NotifyServer, startNotifyProcess } from '../../../test/support/notify-process.js';

// `notify dlq redrive` against the real stack: `notify start` (relay + dispatcher) dead-letters a
// delivery request whose notification row does not exist (a database restored from a backup taken
// before the row was written; the message survived in Kafka). The operator restores the row, then
// re-drives the dead letter and sees it delivered; a dry run and a second run change nothing.

let t: TestDatabase;
let kafka: TestKafka;
let receiver: HttpReceiver;
let hookUrl: string;
let notify: NotifyServer;
/** The bodies the receiver got, in arrival order. */
const deliveries = () => receiver.requests.map((r) => r.body);

beforeAll(async () => {
  [t, kafka, receiver] = await Promise.all([createTestDatabase(), createTestKafka(), startHttpReceiver()]);
  hookUrl = `${receiver.url}/hook`;
  notify = await startNotifyProcess(['--roles', 'relay,dispatcher'], {
    DATABASE_URL: t.url,
    KAFKA_BROKERS: kafka.brokers.join(','),
    NOTIFY_TOPIC_PREFIX: kafka.prefix,
    NOTIFY_TOPIC_PARTITIONS: '2',
    NOTIFY_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
    NOTIFY_RELAY_POLL_MS: '100',
    // The repair sweep must not deliver the restored row on its own: only the redrive may.
    NOTIFY_REPAIR_AFTER_MS: '86400000',
  });
}, 120_000);

afterAll(async () => {
  await stopNotifyAndCloseKafka(kafka, notify);
  await receiver?.close();
  await t?.close();
}, 60_000);

/** Runs `notify dlq redrive …` in this process; its stdout lines, stderr lines and exit code. */
async function redrive(...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runNotify(
    ['dlq', 'redrive', ...args],
    { DATABASE_URL: t.url, KAFKA_BROKERS: kafka.brokers.join(','), NOTIFY_TOPIC_PREFIX: kafka.prefix },
    { out: (l) => out.push(l), err: (l) => err.push(l) },
  );
  return { code, out, err };
}

/** Sum of the high watermarks of a topic: how many messages were ever written to it. */
async function written(suffix: string): Promise<number> {
  const offsets = await kafka.admin.fetchTopicOffsets(kafka.topic(suffix));
  return offsets.reduce((n, o) => n + Number(o.high), 0);
}

/** Whether the dispatcher's group has consumed everything on `<prefix>.requests`. */
async function requestsConsumed(): Promise<boolean> {
  const [high, [committed]] = await Promise.all([
    kafka.admin.fetchTopicOffsets(kafka.topic('requests')),
    kafka.admin.fetchOffsets({ groupId: `${kafka.prefix}.dispatcher`, topics: [kafka.topic('requests')] }),
  ]);
  return high.every((h) => {
    const c = committed?.partitions.find((p) => p.partition === h.partition);
    return Number(h.high) === 0 || (c !== undefined && Number(c.offset) >= Number(h.high));
  });
}

describe('notify dlq redrive', () => {
  it('re-publishes a dead letter once its cause is fixed; the dry run and a second run change nothing', async () => {
    // The request for a notification, exactly as the relay would publish it, whose row is then lost.
    const client = await t.pool.connect();
    let row: unknown;
    let request: { key: string; value: string; headers: Record<string, string> };
    let id: string;
    try {
      await client.query('BEGIN');
      const { notification } = await enqueue(fromPgClient(client), {
        tenant_id: 'acme',
        channel: 'webhook',
        to: hookUrl,
        body: 'restored-row-body',
      });
      id = notification.id;
      row = (await client.query<{ r: unknown }>('SELECT row_to_json(n) AS r FROM notifications n WHERE id = $1', [id])).rows[0]!.r;
      request = (
        await client.query<{ key: string; value: string; headers: Record<string, string> }>(
          `SELECT key, value, headers FROM outbox WHERE topic = 'requests' ORDER BY id DESC LIMIT 1`,
        )
      ).rows[0]!;
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    expect(request.headers[HEADERS.notificationId]).toBe(id);

    const producer = kafka.kafka.producer();
    await producer.connect();
    try {
      await producer.send({
        topic: kafka.topic('requests'),
        messages: [{ key: request.key, value: request.value, headers: request.headers }],
      });
      // A second dead letter with another cause, which the --reason filter leaves alone.
      await producer.send({ topic: kafka.topic('requests'), messages: [{ key: 'garbage', value: 'not json at all' }] });
    } finally {
      await producer.disconnect();
    }
    await waitFor(async () => (await written('dlq')) === 2, { timeoutMs: 30_000, message: 'two dead letters' });
    const dlqOffsets = await kafka.admin.fetchTopicOffsets(kafka.topic('dlq'));
    const ranges = dlqOffsets.flatMap((o) => ['--topic-offset-range', `${o.partition}:0-`]);

    // Dry run: lists the one matching dead letter (id, source, reason; no body) and changes nothing.
    const requestsBefore = await written('requests');
    const dry = await redrive(...ranges, '--reason', 'Unknown Notification', '--dry-run');
    expect(dry.code, dry.err.join('\n')).toBe(0);
    const listed = dry.out.filter((l) => l.startsWith('would redrive'));
    expect(listed).toHaveLength(1);
    expect(listed[0]).toContain(id);
    expect(listed[0]).toContain(`from ${kafka.topic('requests')}[`);
    expect(listed[0]).toContain(`reason: unknown notification ${id}`);
    expect(dry.out.join('\n')).not.toContain('restored-row-body');
    expect(dry.out.at(-1)).toBe(
      `dry run: 1 would be re-published (${kafka.topic('requests')} 1); nothing was published or recorded; read 2, skipped 0 already redriven, 0 without a request topic, 1 not matching the filters`,
    );
    expect(await written('requests')).toBe(requestsBefore);
    expect((await t.pool.query('SELECT count(*)::int AS n FROM dlq_redrives')).rows[0].n).toBe(0);

    // Redriving before the fix only dead-letters it again: the operator restores the row first.
    await t.pool.query('INSERT INTO notifications SELECT * FROM json_populate_record(NULL::notifications, $1)', [JSON.stringify(row)]);

    const real = await redrive(...ranges, '--reason', 'unknown notification');
    expect(real.code, real.err.join('\n')).toBe(0);
    expect(real.out.filter((l) => l.startsWith('redrive\t'))).toHaveLength(1);
    expect(real.out.at(-1)).toMatch(new RegExp(`^re-published 1 \\(${kafka.topic('requests').replace(/\./g, '\\.')} 1\\);`));
    await waitFor(
      async () => (await t.pool.query<{ state: string }>('SELECT state FROM notifications WHERE id = $1', [id])).rows[0]?.state === 'sent',
      { timeoutMs: 30_000, message: 'the restored notification sent' },
    );
    expect(deliveries().filter((d) => d.includes('restored-row-body'))).toHaveLength(1);
    // The original key, value and headers went back, without the dlq-* headers.
    const sameKey = (await kafka.readAll('requests', 3)).filter((m) => m.key?.toString() === request.key);
    expect(sameKey).toHaveLength(2); // the original and the re-published copy
    for (const m of sameKey) {
      expect(m.value?.toString()).toBe(request.value);
      expect(Object.keys(m.headers ?? {}).sort()).toEqual(Object.keys(request.headers).sort());
    }
    const ledger = await t.pool.query('SELECT target_topic, notification_id, redrive_count FROM dlq_redrives');
    expect(ledger.rows).toEqual([{ target_topic: kafka.topic('requests'), notification_id: id, redrive_count: 1 }]);

    // A second run skips what the ledger holds: nothing is published again.
    const again = await redrive(...ranges, '--reason', 'unknown notification');
    expect(again.code).toBe(0);
    expect(again.out.filter((l) => l.startsWith('skip\t'))).toEqual([expect.stringContaining('already redriven')]);
    expect(again.out.at(-1)).toMatch(/^re-published 0; read 2, skipped 1 already redriven \(--force repeats them\)/);
    expect(await written('requests')).toBe(requestsBefore + 1);

    // --force publishes it again: the dispatcher sees a request for an attempt already made and skips it.
    const forced = await redrive(...ranges, '--reason', 'unknown notification', '--force');
    expect(forced.out.at(-1)).toMatch(/^re-published 1 /);
    expect(await written('requests')).toBe(requestsBefore + 2);
    await waitFor(requestsConsumed, { timeoutMs: 30_000, message: 'the dispatcher consumed the forced duplicate' });
    expect(deliveries().filter((d) => d.includes('restored-row-body'))).toHaveLength(1);
    expect((await t.pool.query('SELECT redrive_count FROM dlq_redrives')).rows).toEqual([{ redrive_count: 2 }]);
    expect(await written('dlq')).toBe(2);
  }, 120_000);

  it('says what is wrong with a range, the topic or the arguments', async () => {
    const noRange = await redrive('--dry-run');
    expect(noRange.code).toBe(2);
    expect(noRange.err.join('\n')).toContain('at least one --topic-offset-range');
    const badPartition = await redrive('--topic-offset-range', '99:0-', '--dry-run');
    expect(badPartition.code).toBe(1);
    expect(badPartition.err.join('\n')).toMatch(new RegExp(`${kafka.topic('dlq').replace(/\./g, '\\.')} has no partition 99`));
    const past = await redrive('--topic-offset-range', '0:1000-2000', '--dry-run');
    expect(past.code).toBe(0);
    expect(past.err.join('\n')).toMatch(/partition 0: nothing in 1000-2000/);
    expect(past.out.at(-1)).toMatch(/^dry run: 0 would be re-published/);
    const unknownSub = await runNotify(['dlq', 'replay'], {}, { out: () => {}, err: () => {} });
    expect(unknownSub).toBe(2);
  }, 60_000);
});
