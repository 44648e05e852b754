/**
 * Topic replication at `notify start` (NOTIFY_TOPIC_REPLICATION, min.insync.replicas = RF − 1):
 * the refusal on the shared single broker, and what a 3-node KRaft cluster that this file starts
 * itself (scripts/kafka.mjs, own ports and data; the shared broker is never touched) gets.
 */
import { randomBytes } from 'node:crypto';
import { ConfigResourceTypes, ConfigSource, Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { topicName } from '@notify/contract';
import { dispatcherTopicSuffixes } from '@notify/dispatcher';
import { loadConfig } from '@notify/cli';
import { startKafkaCluster, stopKafkaCluster } from '../../../scripts/kafka.mjs';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { runNotifyCli, startNotifyProcess } from '../../../test/support/notify-process.js';
import { waitFor } from '../../../test/support/wait.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

const freshPrefix = () => `${inject('runId')}.repl.${randomBytes(3).toString('hex')}`;
const lines = (s: string) => s.split('\n').filter((l) => l.trim() !== '');

async function withAdmin<T>(brokers: string, fn: (admin: ReturnType<Kafka['admin']>) => Promise<T>): Promise<T> {
  const admin = new Kafka({ clientId: 'notify-test', brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.disconnect();
  }
}

describe('NOTIFY_TOPIC_REPLICATION on the single shared broker', () => {
  it('start refuses with one line when the cluster lists fewer brokers than asked for, and creates no topic', async () => {
    const brokers = inject('kafkaBrokers');
    const prefix = freshPrefix();
    const res = await runNotifyCli(['start', '--roles', 'relay'], {
      DATABASE_URL: t.url,
      KAFKA_BROKERS: brokers,
      NOTIFY_TOPIC_PREFIX: prefix,
      NOTIFY_TOPIC_REPLICATION: '3',
    });
    expect(res.code).toBe(1);
    const missing = dispatcherTopicSuffixes(loadConfig({}).retry).length;
    expect(lines(res.stderr)).toEqual([
      `notify: NOTIFY_TOPIC_REPLICATION=3 but the Kafka cluster at ${brokers} lists 1 broker: ` +
        `cannot create ${missing} missing topic(s) with 3 replicas; add brokers or lower NOTIFY_TOPIC_REPLICATION`,
    ]);
    expect(res.stdout).not.toContain('listening');
    const topics = await withAdmin(brokers, (admin) => admin.listTopics());
    expect(topics.filter((name) => name.startsWith(`${prefix}.`))).toEqual([]);
  });
});

describe('a 3-node cluster', () => {
  const name = `repl${process.pid}`;
  let brokers = '';
  beforeAll(async () => {
    brokers = (await startKafkaCluster({ name, brokers: 3, log: () => {} })).brokers;
  }, 120_000);
  afterAll(async () => {
    await stopKafkaCluster({ name, log: () => {} });
  }, 60_000);

  it('start creates missing topics with RF 3 and min.insync.replicas 2, and warns about an existing topic with RF 1', async () => {
    const prefix = freshPrefix();
    const requests = topicName(prefix, 'requests');
    // An existing topic with one replica: notify start leaves it alone and says so.
    await withAdmin(brokers, (admin) => admin.createTopics({ topics: [{ topic: requests, numPartitions: 2, replicationFactor: 1 }] }));

    const server = await startNotifyProcess(['--roles', 'relay'], {
      DATABASE_URL: t.url,
      KAFKA_BROKERS: brokers,
      NOTIFY_TOPIC_PREFIX: prefix,
      NOTIFY_TOPIC_PARTITIONS: '2',
      LOG_LEVEL: 'info',
    });
    await server.stop();

    const logs = server
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; topics?: string[]; replication?: number; min_insync_replicas?: number });
    const warning = logs.find((l) => l.msg.startsWith('existing Kafka topics have fewer replicas than 3'));
    expect(warning?.topics).toEqual([`${requests} (RF 1)`]);
    const created = logs.find((l) => l.msg === 'created Kafka topics');
    expect(created).toMatchObject({ replication: 3, min_insync_replicas: 2 });
    expect(created?.topics).not.toContain(requests);

    await withAdmin(brokers, async (admin) => {
      const names = (await admin.listTopics()).filter((n) => n.startsWith(`${prefix}.`)).sort();
      expect(names).toEqual([...(created?.topics ?? []), requests].sort());
      // A broker may not know a just-created topic's partitions yet ("This server does not host
      // this topic-partition", seen under load on 2026-12-02): ask again until every broker does.
      const { topics } = await waitFor(() => admin.fetchTopicMetadata({ topics: names }), {
        timeoutMs: 60_000,
        intervalMs: 500,
        message: `metadata of ${names.length} topics`,
      });
      for (const topic of topics) {
        const rf = topic.name === requests ? 1 : 3;
        // NOTIFY_TOPIC_PARTITIONS for the others, NOTIFY_RETRY_TOPIC_PARTITIONS (default 1) for delay topics
        const partitions = topic.name.startsWith(`${prefix}.retry.`) ? 1 : 2;
        expect(
          topic.partitions.map((p) => p.replicas.length),
          topic.name,
        ).toEqual(Array.from({ length: partitions }, () => rf));
      }
      const { resources } = await admin.describeConfigs({
        includeSynonyms: false,
        resources: names.map((n) => ({ type: ConfigResourceTypes.TOPIC, name: n, configNames: ['min.insync.replicas'] })),
      });
      for (const r of resources) {
        const minIsr = r.configEntries.find((e) => e.configName === 'min.insync.replicas');
        // The RF 1 topic has the cluster's default (2 here, as scripts/kafka.mjs configures a 3-node cluster), not ours.
        const ours = minIsr?.configSource === ConfigSource.TOPIC_CONFIG;
        expect({ topic: r.resourceName, value: minIsr?.configValue, ours }).toEqual({
          topic: r.resourceName,
          value: '2',
          ours: r.resourceName !== requests,
        });
      }
    });
  });
});
