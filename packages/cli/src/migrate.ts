import type { Config } from './config.js';
import { createDb } from '@notify/runtime';
import { databaseName, ensureDatabase, migrateToLatest } from '@notify/migrations';
import type { CliIo } from './cli-error.js';

/**
 * `notify migrate`: creates the database when it does not exist, then applies every pending
 * migration, each in its own transaction with a `lock_timeout` of NOTIFY_MIGRATE_LOCK_TIMEOUT_MS
 * (tried NOTIFY_MIGRATE_LOCK_ATTEMPTS times, then a message naming the cause), so that it never
 * queues behind a long transaction while every enqueue queues behind it. Idempotent. Throws
 * `DatabaseUnreachableError` (one line) when PostgreSQL does not answer.
 */
export async function runMigrate(config: Pick<Config, 'databaseUrl' | 'migrate'>, io: CliIo): Promise<void> {
  const { created } = await ensureDatabase(config.databaseUrl);
  if (created) io.out(`notify: created database ${databaseName(config.databaseUrl)}`);
  const db = createDb({ connectionString: config.databaseUrl, max: 1, applicationName: 'notify-migrate' });
  try {
    const results = await migrateToLatest(db, {
      lockTimeoutMs: config.migrate.lockTimeoutMs,
      lockAttempts: config.migrate.lockAttempts,
      onLockTimeout: ({ migration, attempt }) =>
        io.out(
          `notify: ${migration} waited ${config.migrate.lockTimeoutMs} ms for a lock (a long transaction holds one it needs); rolled back, trying again (${attempt} of ${config.migrate.lockAttempts})`,
        ),
    });
    const applied = results.filter((r) => r.status === 'Success').map((r) => r.migrationName);
    io.out(applied.length > 0 ? `notify: applied ${applied.join(', ')}` : 'notify: database is up to date');
  } finally {
    await db.destroy();
  }
}
