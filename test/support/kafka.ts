import { randomBytes } from 'node:crypto';
import { type Admin, Kafka, logLevel, type KafkaMessage } from 'kafkajs';
import { inject } from 'vitest';
import { ensureTopics } from '@notify/cli';
import { topicName } from '@notify/contract';
import type { NotifyServer } from './notify-process.js';
import { waitFor } from './wait.js';

/** Kafka for one test file: its own topic prefix, so runs and files never share topics. */
export interface TestKafka {
  readonly brokers: string[];
  readonly prefix: string;
  readonly kafka: Kafka;
  readonly admin: Admin;
  /** `<prefix>.<suffix>` */
  topic(suffix: string): string;
  /** Creates `<prefix>.<suffix>` topics (idempotent) and waits until they have leaders. */
  createTopics(suffixes: readonly string[], partitions?: number): Promise<void>;
  /** Reads every message currently on a topic, from the beginning, until `count` arrived. */
  readAll(suffix: string, count: number, timeoutMs?: number): Promise<KafkaMessage[]>;
  /** Deletes this file's topics (every topic under its prefix, whoever created it) and disconnects. */
  close(): Promise<void>;
}

export async function createTestKafka(): Promise<TestKafka> {
  const brokers = inject('kafkaBrokers').split(',');
  const prefix = `${inject('runId')}.${randomBytes(3).toString('hex')}`;
  const kafka = new Kafka({ clientId: 'notify-test', brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const created = new Set<string>();
  const topic = (suffix: string) => topicName(prefix, suffix);
  return {
    brokers,
    prefix,
    kafka,
    admin,
    topic,
    async createTopics(suffixes, partitions = 3) {
      const names = suffixes.map(topic);
      await ensureTopics(admin, names, partitions);
      names.forEach((n) => created.add(n));
    },
    async readAll(suffix, count, timeoutMs = 15_000) {
      const consumer = kafka.consumer({ groupId: `${prefix}.reader.${randomBytes(3).toString('hex')}`, allowAutoTopicCreation: false });
      const messages: KafkaMessage[] = [];
      await consumer.connect();
      try {
        await consumer.subscribe({ topic: topic(suffix), fromBeginning: true });
        await consumer.run({
          eachMessage: async ({ message }) => {
            messages.push(message);
          },
        });
        await waitFor(() => messages.length >= count, { timeoutMs, message: `${count} messages on ${topic(suffix)}` });
        return messages;
      } finally {
        await consumer.disconnect();
      }
    },
    async close() {
      // `notify start` children create topics under the prefix too: delete them with the file's own.
      const listed = await admin.listTopics().catch(() => [] as string[]);
      const topics = new Set([...created, ...listed.filter((name) => name.startsWith(`${prefix}.`))]);
      if (topics.size > 0) await admin.deleteTopics({ topics: [...topics] }).catch(() => {});
      await admin.disconnect();
    },
  };
}

/**
 * The end of a test file that ran `notify start` children: stops each (SIGTERM, at once), then
 * deletes every topic under the file's prefix from the shared broker and disconnects. Returns the
 * children's exit codes in order (undefined for one that never started).
 */
export async function stopNotifyAndCloseKafka(
  kafka: TestKafka | undefined,
  ...children: readonly (NotifyServer | undefined)[]
): Promise<(number | null | undefined)[]> {
  const codes = await Promise.all(children.map((child) => (child ? child.stop() : Promise.resolve(undefined))));
  await kafka?.close();
  return codes;
}
