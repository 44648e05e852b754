import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { DEFAULT_DATABASE_URL } from '@notify/cli';
import { createDb } from '@notify/runtime';
import { ensureDatabase, migrateToLatest, withDatabase } from '@notify/migrations';
import { kafkaScript } from './kafka-script.js';

/** A fresh, migrated database for one scenario. */
interface BenchDatabase {
  readonly url: string;
  readonly name: string;
  /** Drops it (WITH FORCE: a scenario that failed may leave connections behind). */
  drop(): Promise<void>;
}

/** The real local stack the bench runs against, and a name space per scenario. */
export interface Stack {
  /** Server URL (DATABASE_URL, or the default 127.0.0.1:5432). */
  readonly serverUrl: string;
  /** Unique per `pnpm bench` run: prefixes database names and topic prefixes. */
  readonly runId: string;
  /** Creates `<runId>_<label>` and applies every migration. */
  freshDatabase(label: string): Promise<BenchDatabase>;
  /** `bench.<runId>.<label>`: a topic prefix nobody else uses. */
  topicPrefix(label: string): string;
  /** Starts (or reuses) the local Kafka broker, once. */
  kafkaBrokers(): Promise<string[]>;
  /** Deletes every topic whose name starts with `prefix.`. */
  deleteTopics(prefix: string): Promise<void>;
  /** Drops databases this run created and not yet dropped, and deletes this run's topics (after a failure or an interrupt). */
  cleanup(): Promise<void>;
}

/** PostgreSQL must answer before anything else runs; the error says how to fix it. */
async function checkPostgres(serverUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: withDatabase(serverUrl, 'postgres'), connectionTimeoutMillis: 5_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (err) {
    throw new Error(
      `PostgreSQL does not answer at ${serverUrl.replace(/:[^:@/]*@/, ':***@')}: ${(err as Error).message}. Start it or set DATABASE_URL.`,
      { cause: err },
    );
  } finally {
    await client.end().catch(() => {});
  }
}

/** Builds the stack for one run. Reads DATABASE_URL (the only environment it reads). */
export async function createStack(env: NodeJS.ProcessEnv, log: (line: string) => void): Promise<Stack> {
  const serverUrl = env.DATABASE_URL ?? DEFAULT_DATABASE_URL;
  await checkPostgres(serverUrl);
  const runId = `bench_${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const live = new Set<string>();
  let brokers: Promise<string[]> | undefined;

  async function dropDatabase(name: string): Promise<void> {
    const admin = new pg.Client({ connectionString: withDatabase(serverUrl, 'postgres') });
    admin.on('error', () => {});
    await admin.connect();
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
      live.delete(name);
    } finally {
      await admin.end();
    }
  }

  async function deleteTopics(prefix: string): Promise<void> {
    if (!brokers) return;
    const kafka = new Kafka({ clientId: 'notify-bench-cleanup', brokers: await brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const topics = (await admin.listTopics()).filter((t) => t.startsWith(`${prefix}.`));
      if (topics.length > 0) await admin.deleteTopics({ topics, timeout: 30_000 });
    } finally {
      await admin.disconnect();
    }
  }

  return {
    serverUrl,
    runId,
    async freshDatabase(label) {
      const name = `${runId}_${label.replace(/[^a-z0-9_]/gi, '_')}`.toLowerCase();
      const url = withDatabase(serverUrl, name);
      await ensureDatabase(url);
      live.add(name);
      const db = createDb({ connectionString: url, max: 1, applicationName: 'notify-bench-migrate' });
      try {
        await migrateToLatest(db);
      } finally {
        await db.destroy();
      }
      return { url, name, drop: () => dropDatabase(name) };
    },
    topicPrefix(label) {
      return `bench.${runId}.${label}`;
    },
    kafkaBrokers() {
      brokers ??= kafkaScript()
        .then(({ ensureKafka }) => ensureKafka({ log: (l) => log(`[kafka] ${l}`) }))
        .then((k) => k.brokers.split(','));
      return brokers;
    },
    deleteTopics,
    async cleanup() {
      for (const name of [...live]) await dropDatabase(name).catch(() => {});
      await deleteTopics(`bench.${runId}`).catch(() => {});
    },
  };
}
