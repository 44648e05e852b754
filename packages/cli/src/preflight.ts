import type { Admin, Kafka } from 'kafkajs';
import { type Kysely, Migrator } from 'kysely';
import type pg from 'pg';
import type { Database } from '@notify/migrations';
import {
  DatabaseUnreachableError,
  SqlFileMigrationProvider,
  connectFailure,
  connectPostgres,
  databaseName,
  redactUrl,
} from '@notify/migrations';
import { fromKysely } from '@notify/outbox';
import { createDb } from '@notify/runtime';
import { TOPICS, topicName } from '@notify/contract';
import { dispatcherTopicSuffixes } from '@notify/dispatcher';
import { CliError } from './cli-error.js';
import type { Config } from './config.js';

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
    throw new DatabaseUnreachableError(connectFailure(url, err), { cause: err });
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
 * Migrations the database has applied that this build does not have: its schema is newer than
 * the code (the code was rolled back, or a rolling deploy's new version migrated first).
 */
export async function unknownMigrations(db: Kysely<Database>): Promise<string[]> {
  const known = new Set(Object.keys(await new SqlFileMigrationProvider().getMigrations()));
  const { rows } = await fromKysely(db).query<{ name: string }>('SELECT name FROM kysely_migration ORDER BY name', []);
  return rows.map((r) => r.name).filter((name) => !known.has(name));
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

// The tables whose churn autovacuum must keep up with: an outbox row inserted and deleted per
// message, a notification updated at every attempt, attempts appended (docs/operations.md,
// "Vacuum and statistics").
const CHURNING_TABLES = ['attempts', 'notifications', 'outbox'];

/**
 * Why autovacuum would leave notify's churning tables alone, one line each (empty when it looks
 * after them): off on the server (`autovacuum`, or `track_counts`, without which it cannot tell
 * what changed), or off for a table (`autovacuum_enabled`). `notify start` logs them as a warning:
 * without VACUUM the dead rows of the outbox and of notifications pile up under the relay's claims
 * and the dispatcher's reads, and without ANALYZE the statistics stay as they were.
 */
export async function autovacuumGaps(db: Kysely<Database>): Promise<string[]> {
  const { rows } = await fromKysely(db).query<{ autovacuum: string; track_counts: string; off: string[] }>(
    `SELECT current_setting('autovacuum') AS autovacuum, current_setting('track_counts') AS track_counts,
            coalesce(array_agg(c.relname::text ORDER BY c.relname) FILTER (
              WHERE EXISTS (SELECT 1 FROM unnest(c.reloptions) AS o WHERE o ~* '^autovacuum_enabled=(false|off|no|n|f|0)$')), '{}') AS off
       FROM pg_class AS c
      WHERE c.oid IN (SELECT to_regclass(t) FROM unnest($1::text[]) AS t)`,
    [CHURNING_TABLES],
  );
  const { autovacuum, track_counts: trackCounts, off } = rows[0]!;
  return [
    ...(autovacuum === 'on' ? [] : ['autovacuum is off on the server']),
    ...(trackCounts === 'on' ? [] : ['track_counts is off on the server']),
    ...off.map((table) => `autovacuum_enabled is off for ${table}`),
  ];
}

/**
 * How many tenants still keep a webhook signing secret in plaintext (`tenants.webhook_signing_secret`,
 * from before sealed secrets): `notify start` and `notify config-check` warn about them, and
 * `notify webhook-secrets seal` seals them.
 */
export async function plaintextWebhookSecrets(db: Kysely<Database>): Promise<number> {
  const { rows } = await fromKysely(db).query<{ n: number }>(
    'SELECT count(*)::int AS n FROM tenants WHERE webhook_signing_secret IS NOT NULL',
    [],
  );
  return rows[0]!.n;
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

/** A topic of notify's with the partition count `notify start` creates it with. */
interface NotifyTopic {
  readonly topic: string;
  readonly partitions: number;
}

/**
 * The Kafka topics the relay and the dispatcher use with `config`, each with the partition count
 * `notify start` creates it with: NOTIFY_RETRY_TOPIC_PARTITIONS for the delay topics, NOTIFY_TOPIC_PARTITIONS for the others.
 */
export function notifyTopics(config: Config): NotifyTopic[] {
  return dispatcherTopicSuffixes(config.retry).map((suffix) => ({
    topic: topicName(config.topicPrefix, suffix),
    partitions: suffix.startsWith(TOPICS.retry('')) ? config.retryTopicPartitions : config.topicPartitions,
  }));
}

/** How `notify start` replicates the topics it creates. */
interface TopicReplication {
  readonly replicationFactor: number;
  /** `min.insync.replicas` of each topic: RF − 1, at least 1 (with acks = all, a write needs this many copies). */
  readonly minInsyncReplicas: number;
}

/**
 * NOTIFY_TOPIC_REPLICATION, or min(3, brokers) when it is unset, with `min.insync.replicas` one
 * less (at least 1): RF 3 keeps accepting writes with one broker down and loses nothing acked
 * unless two brokers are lost.
 */
/** @internal Exported for its tests. */
export function topicReplicationFor(requested: number | undefined, brokers: number): TopicReplication {
  const replicationFactor = requested ?? Math.max(1, Math.min(3, brokers));
  return { replicationFactor, minInsyncReplicas: Math.max(1, replicationFactor - 1) };
}

/** Options of `ensureTopics`. */
export interface EnsureTopicsOptions {
  readonly timeoutMs?: number;
  /** Replication of the topics it creates; default: the broker's `default.replication.factor` and `min.insync.replicas`. */
  readonly replication?: TopicReplication;
}

/**
 * Creates the topics that do not exist yet, with `partitions` partitions each (and `replication`
 * when given), and waits (up to `timeoutMs`) until every partition of every named topic has a
 * leader and every partition of a topic it created answers its leader. Returns the names it
 * created. kafkajs' own `waitForLeaders` gives up when a just-created topic briefly answers
 * "This server does not host this topic-partition" (seen here several times), so the metadata is
 * polled instead. The metadata names a leader before that broker serves the partition: started
 * then, a consumer's first fetches fail with NOT_LEADER_FOR_PARTITION and kafkajs re-joins the
 * group after each one (about twenty re-joins per group in the first half second, seen in the
 * bench's first round), and the producer retries its first sends; so each created topic's
 * offsets are read from the leaders (ListOffsets) before this returns.
 */
export async function ensureTopics(
  admin: Admin,
  names: readonly string[],
  partitions: number | ((topic: string) => number),
  { timeoutMs = 30_000, replication }: EnsureTopicsOptions = {},
): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = names.filter((n) => !existing.has(n));
  if (missing.length > 0) {
    await admin.createTopics({
      topics: missing.map((topic) => ({
        topic,
        numPartitions: typeof partitions === 'number' ? partitions : partitions(topic),
        ...(replication
          ? {
              replicationFactor: replication.replicationFactor,
              configEntries: [{ name: 'min.insync.replicas', value: String(replication.minInsyncReplicas) }],
            }
          : {}),
      })),
      waitForLeaders: false,
    });
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
    if (ready && (await leadersServe(admin, missing))) return missing;
    if (performance.now() > deadline)
      throw new CliError(`Kafka topics have no leader that serves them after ${timeoutMs} ms: ${names.join(', ')}`, 1);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Whether every partition of `topics` answers a ListOffsets request on its leader now. */
async function leadersServe(admin: Admin, topics: readonly string[]): Promise<boolean> {
  try {
    for (const topic of topics) await admin.fetchTopicOffsets(topic);
    return true;
  } catch {
    return false;
  }
}

/** What `notify start` does about its topics before it creates any (`planTopics`); `notify config-check` reports the same. */
export interface TopicPlan extends TopicReplication {
  /** Brokers the cluster lists now. */
  readonly brokers: number;
  /** The topics it creates, each with the partition count it creates it with. */
  readonly missing: readonly NotifyTopic[];
  /** Existing topics with fewer replicas than `replicationFactor` (their smallest partition), left as they are. */
  readonly lowerExisting: readonly { readonly topic: string; readonly replicationFactor: number }[];
  /**
   * Existing topics with another partition count than this configuration creates them with, used
   * as they are: every role reads the count from the topic's metadata, and changing it is the
   * operator's decision (docs/operations.md, "Topic partition counts").
   */
  readonly otherPartitions: readonly PartitionCountDifference[];
}

/** An existing topic whose partition count is not the one this configuration creates it with. */
interface PartitionCountDifference {
  readonly topic: string;
  /** What the topic has. */
  readonly partitions: number;
  /** What NOTIFY_TOPIC_PARTITIONS (NOTIFY_RETRY_TOPIC_PARTITIONS for a delay topic) asks for. */
  readonly configured: number;
}

/**
 * Compares the cluster with the topics of `config` (`notifyTopics`): which are missing, and which
 * exist with fewer replicas or another partition count than a start would create them with, and
 * decides the replication of the ones to create (`topicReplicationFor`). The one place that
 * decides, so `notify start` logs what `notify config-check` reports. Throws a one-line `CliError`
 * when a topic must be created and the cluster lists fewer brokers than NOTIFY_TOPIC_REPLICATION
 * asks for. When every topic exists, a broker that is down does not stop the service from
 * starting (that is what the replicas are for).
 */
export async function planTopics(admin: Admin, config: Config): Promise<TopicPlan> {
  const expected = notifyTopics(config);
  const brokers = (await admin.describeCluster()).brokers.length;
  const replication = topicReplicationFor(config.topicReplication, brokers);
  const existing = new Set(await admin.listTopics());
  const missing = expected.filter((t) => !existing.has(t.topic));
  if (missing.length > 0 && brokers < replication.replicationFactor) {
    throw new CliError(
      `NOTIFY_TOPIC_REPLICATION=${replication.replicationFactor} but the Kafka cluster at ${config.kafkaBrokers.join(',')} lists ${brokers} broker${brokers === 1 ? '' : 's'}: ` +
        `cannot create ${missing.length} missing topic(s) with ${replication.replicationFactor} replicas; add brokers or lower NOTIFY_TOPIC_REPLICATION`,
      1,
    );
  }
  const present = expected.filter((t) => existing.has(t.topic));
  const lowerExisting: { topic: string; replicationFactor: number }[] = [];
  const otherPartitions: PartitionCountDifference[] = [];
  if (present.length > 0) {
    const { topics } = await admin.fetchTopicMetadata({ topics: present.map((t) => t.topic) });
    for (const t of topics) {
      const rf = Math.min(...t.partitions.map((p) => p.replicas.length));
      if (rf < replication.replicationFactor) lowerExisting.push({ topic: t.name, replicationFactor: rf });
      const configured = present.find((p) => p.topic === t.name)!.partitions;
      if (t.partitions.length !== configured) otherPartitions.push({ topic: t.name, partitions: t.partitions.length, configured });
    }
  }
  return { ...replication, brokers, missing, lowerExisting, otherPartitions };
}
