import { readdir, readFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { type Kysely, type Migration, type MigrationProvider, type MigrationResult, Migrator, sql } from 'kysely';

const SQL_DIR = fileURLToPath(new URL('../sql/', import.meta.url));

/**
 * Reads `migrations/sql/NNNN_name.sql`, in name order. Each file runs as one multi-statement
 * query (simple protocol), inside the transaction Kysely's Migrator opens on PostgreSQL, after
 * `SET LOCAL lock_timeout` when `lockTimeoutMs` is given.
 */
export class SqlFileMigrationProvider implements MigrationProvider {
  constructor(
    private readonly dir: string = SQL_DIR,
    private readonly lockTimeoutMs?: number,
  ) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(this.dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
    const migrations: Record<string, Migration> = {};
    const prefix = this.lockTimeoutMs === undefined ? '' : `SET LOCAL lock_timeout = ${Math.max(1, Math.trunc(this.lockTimeoutMs))};\n`;
    for (const file of files) {
      const text = await readFile(`${this.dir}/${file}`, 'utf8');
      migrations[file.replace(/\.sql$/, '')] = {
        up: async (db) => {
          await sql.raw(prefix + text).execute(db);
        },
      };
    }
    return migrations;
  }
}

/** Options of `migrateToLatest`. */
export interface MigrateOptions {
  /**
   * How long a migration waits for a lock (`lock_timeout`, ms; default 5,000). A migration that
   * waits behind a long transaction would otherwise wait for ever, and every enqueue and read of
   * the table queues behind its lock request (docs/operations.md, "Upgrading").
   */
  readonly lockTimeoutMs?: number;
  /** Tries per migration when its lock wait times out (default 5); then it fails with a message that says why. */
  readonly lockAttempts?: number;
  /** Pause before try n + 1 (ms, default n × 2,000). */
  readonly retryDelayMs?: (attempt: number) => number;
  /** Told before each retry (the CLI prints a line). */
  readonly onLockTimeout?: (event: { readonly migration: string; readonly attempt: number }) => void | Promise<void>;
  /** The SQL files' directory (tests). */
  readonly dir?: string;
}

const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Applies every pending migration, each in a transaction of its own (with its ledger row): a
 * migration's locks are released when it commits rather than held until the last one does, and a
 * failure leaves the ones before it applied and recorded. A migration whose lock wait reaches
 * `lockTimeoutMs` is rolled back and tried again (`lockAttempts`). Idempotent: a second run
 * applies nothing. Throws on the first failure.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema: migrations run raw SQL files
export async function migrateToLatest(db: Kysely<any>, options: MigrateOptions = {}): Promise<MigrationResult[]> {
  const { lockTimeoutMs = 5_000, lockAttempts = 5, retryDelayMs = (n: number) => n * 2_000, onLockTimeout, dir } = options;
  // Each engineer adds files in their own number range (0020–0029, 0030–0039, …), and ranges land
  // in any order: a database migrated after 0031 must still take a 0021 that lands later.
  const migrator = new Migrator({ db, provider: new SqlFileMigrationProvider(dir, lockTimeoutMs), allowUnorderedMigrations: true });
  const applied: MigrationResult[] = [];
  let attempt = 1;
  for (;;) {
    const { error, results = [] } = await migrator.migrateUp();
    if (!error) {
      if (results.length === 0) return applied;
      applied.push(...results);
      attempt = 1;
      continue;
    }
    const failed = results.find((r) => r.status === 'Error')?.migrationName ?? '(unknown)';
    if ((error as { code?: string }).code === LOCK_NOT_AVAILABLE) {
      if (attempt < lockAttempts) {
        await onLockTimeout?.({ migration: failed, attempt });
        await delay(retryDelayMs(attempt));
        attempt++;
        continue;
      }
      throw new Error(
        `migration ${failed} waited ${lockTimeoutMs} ms for a lock ${attempt} times and was rolled back (the ones before it are applied): ` +
          'a long transaction holds a lock it needs. Find it with ' +
          "`SELECT pid, xact_start, state, query FROM pg_stat_activity WHERE xact_start < now() - interval '1 minute'`, " +
          'let it finish or end it, then run `notify migrate` again',
        { cause: error },
      );
    }
    throw new Error(`migration ${failed} failed: ${(error as Error).message}`, { cause: error });
  }
}
