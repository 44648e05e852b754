import type { Admin, Kafka } from 'kafkajs';
import { type Kysely, Migrator } from 'kysely';
import type pg from 'pg';
import type { Database } from '@notify/migrations';
import { DatabaseUnreachableError, SqlFileMigrationProvider, connectPostgres, databaseName, redactUrl } from '@notify/migrations';
import { createDb } from '@notify/runtime';
import { CliError } from './cli-error.js';

/**
 * Connects once to PostgreSQL. Throws `DatabaseUnreachableError` (one line, names the URL
 * without its password) when no server answers, and a `CliError` when the database is missing.
 */
export async function checkDatabase(url: string, timeoutMs = 5_000): Promise<void> {
  let client: pg.Client;
  try {
    client = await connectPostgres(url, timeoutMs);
  } catch (err) {
    if ((err as { code?: string }).code === '3D000') {
      throw new CliError(`database "${databaseName(url)}" does not exist on ${redactUrl(url)}; run \`pnpm notify migrate\` first`);
    }
    throw err;
  }
  try {
    await client.query('SELECT 1');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new DatabaseUnreachableError(
      `cannot reach PostgreSQL at ${redactUrl(url)} (${e.code ?? e.message}); start it or set DATABASE_URL`,
      { cause: err },
    );
  } finally {
    await client.end().catch(() => {});
  }
}

/** Refuses to run against a schema with pending migrations (a process would fail later, on a missing table, in a worse place). */
export async function checkMigrations(db: Kysely<Database>): Promise<void> {
  const migrator = new Migrator({ db, provider: new SqlFileMigrationProvider() });
  const migrations = await migrator.getMigrations();
  const pending = migrations.filter((m) => m.executedAt === undefined).map((m) => m.name);
  if (pending.length > 0) {
    throw new CliError(`the database schema is not up to date (pending: ${pending.join(', ')}); run \`pnpm notify migrate\` first`);
  }
}

/**
 * Runs `fn` with a one-connection pool, after `checkDatabase` and `checkMigrations`, and closes
 * the pool after: the shape of a short command (`api-keys`, `dlq redrive`).
 */
export async function withMigratedDb<T>(url: string, applicationName: string, fn: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  await checkDatabase(url);
  const db = createDb({ connectionString: url, max: 1, applicationName });
  try {
    await checkMigrations(db);
    return await fn(db);
  } finally {
    await db.destroy();
  }
}

/** Connects an admin client and asks the cluster for its brokers. Throws a one-line `CliError` when Kafka does not answer. */
export async function connectKafkaAdmin(kafka: Kafka, brokers: readonly string[]): Promise<Admin> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    await admin.describeCluster();
    return admin;
  } catch (err) {
    await admin.disconnect().catch(() => {});
    const e = err as Error & { cause?: Error };
    const reason = (e.cause?.message ?? e.message).split('\n')[0];
    throw new CliError(`cannot reach Kafka at ${brokers.join(',')} (${reason}); start it (\`pnpm kafka start\`) or set KAFKA_BROKERS`, 1, {
      cause: err,
    });
  }
}

/**
 * Creates the topics that do not exist yet, with `partitions` partitions each, and waits (up to
 * `timeoutMs`) until every partition of every named topic has a leader. Returns the names it created.
 * kafkajs' own `waitForLeaders` gives up when a just-created topic briefly answers "This server
 * does not host this topic-partition" (seen here several times), so the metadata is polled instead.
 */
export async function ensureTopics(
  admin: Admin,
  names: readonly string[],
  partitions: number,
  { timeoutMs = 30_000 } = {},
): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = names.filter((n) => !existing.has(n));
  if (missing.length > 0) {
    await admin.createTopics({ topics: missing.map((topic) => ({ topic, numPartitions: partitions })), waitForLeaders: false });
  }
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const ready = await admin
      .fetchTopicMetadata({ topics: [...names] })
      .then(
        ({ topics }) =>
          topics.length === names.length && topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0)),
      )
      .catch(() => false);
    if (ready) return missing;
    if (performance.now() > deadline) throw new CliError(`Kafka topics have no leader after ${timeoutMs} ms: ${names.join(', ')}`, 1);
    await new Promise((r) => setTimeout(r, 100));
  }
}
