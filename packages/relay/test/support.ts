// Helpers for @notify/relay's integration tests (real PostgreSQL and Kafka).
import type { KafkaMessage } from 'kafkajs';
import type pg from 'pg';
import { type OutboxMessage } from '@notify/contract';
import { fromPgClient, outboxInsert } from '@notify/outbox';
import type { Relay, RelayEventMap, RelayEventName } from '../src/index.js';

/** One test row: `value` is JSON `{ k, seq }` so order can be checked on the topic. */
export function testMessage(key: string, seq: number, topic = 'requests'): OutboxMessage {
  return { topic, key, value: JSON.stringify({ k: key, seq }), headers: { 'x-seq': String(seq) } };
}

/** Inserts messages in one transaction (outboxInsert keeps their order). */
export async function insertMessages(pool: pg.Pool, messages: readonly OutboxMessage[]): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await outboxInsert(fromPgClient(client), { messages });
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/**
 * Unpublished outbox rows, and the total: every outbox row plus the records of published delivery
 * requests retained (such a request leaves the outbox and a record in `outbox_published`; 0280).
 */
export async function outboxCounts(pool: pg.Pool): Promise<{ unpublished: number; total: number }> {
  const { rows } = await pool.query<{ unpublished: number; total: number }>(
    `SELECT count(*) FILTER (WHERE published_at IS NULL)::int AS unpublished,
            count(*)::int + (SELECT count(*) FROM outbox_published)::int AS total
       FROM outbox`,
  );
  return rows[0]!;
}

/** Records every event of the relays, tagged with the instance. */
export function recordEvents<E extends RelayEventName>(
  relays: readonly Relay[],
  event: E,
): { instanceId: string; payload: RelayEventMap[E] }[] {
  const seen: { instanceId: string; payload: RelayEventMap[E] }[] = [];
  for (const r of relays) r.on(event, (payload) => void seen.push({ instanceId: r.instanceId, payload }));
  return seen;
}

/** `{k, seq}` of a consumed message. */
export function decode(m: KafkaMessage): { key: string; k: string; seq: number } {
  const v = JSON.parse(m.value!.toString('utf8')) as { k: string; seq: number };
  return { key: m.key!.toString('utf8'), ...v };
}

/**
 * Per-key order check over messages in consumption order (one partition per key, so this is
 * the partition's order). `exact`: every key's sequence is 0,1,2,…,n-1 with no duplicate.
 * Otherwise (at-least-once): first occurrences are in order, and every duplicate re-sends an
 * already-seen seq. Returns a list of violations (empty = fine).
 */
export function keyOrderViolations(
  messages: readonly KafkaMessage[],
  expectedPerKey: ReadonlyMap<string, number>,
  exact: boolean,
): string[] {
  const problems: string[] = [];
  const byKey = new Map<string, number[]>();
  for (const m of messages) {
    const { key, k, seq } = decode(m);
    if (key !== k) problems.push(`message key ${key} carries value of key ${k}`);
    let list = byKey.get(key);
    if (!list) byKey.set(key, (list = []));
    list.push(seq);
  }
  for (const [key, n] of expectedPerKey) {
    const seqs = byKey.get(key) ?? [];
    if (exact) {
      const bad = seqs.findIndex((s, i) => s !== i);
      if (bad !== -1 || seqs.length !== n) {
        problems.push(
          `key ${key}: expected 0..${n - 1} in order, got ${seqs.length} messages, first mismatch at ${bad}: …${seqs.slice(Math.max(0, bad - 3), bad + 3).join(',')}`,
        );
      }
      continue;
    }
    let next = 0;
    for (const s of seqs) {
      if (s === next) next++;
      else if (s > next) {
        problems.push(`key ${key}: seq ${s} arrived before ${next}`);
        break;
      }
    }
    if (next !== n) problems.push(`key ${key}: only ${next} of ${n} seqs arrived in order`);
  }
  return problems;
}
