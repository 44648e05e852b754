import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { type Kysely, type Migration, type MigrationProvider, type MigrationResultSet, Migrator, sql } from 'kysely';

const SQL_DIR = fileURLToPath(new URL('../sql/', import.meta.url));

/**
 * Reads `migrations/sql/NNNN_name.sql`, in name order. Each file runs as one multi-statement
 * query (simple protocol), inside the transaction Kysely's Migrator opens on PostgreSQL.
 */
export class SqlFileMigrationProvider implements MigrationProvider {
  constructor(private readonly dir: string = SQL_DIR) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(this.dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
    const migrations: Record<string, Migration> = {};
    for (const file of files) {
      const text = await readFile(`${this.dir}/${file}`, 'utf8');
      migrations[file.replace(/\.sql$/, '')] = {
        up: async (db) => {
          await sql.raw(text).execute(db);
        },
      };
    }
    return migrations;
  }
}

/** Applies every pending migration. Idempotent: a second run applies nothing. Throws on the first failure. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema: migrations run raw SQL files
export async function migrateToLatest(db: Kysely<any>): Promise<MigrationResultSet['results']> {
  // Each engineer adds files in their own number range (0020–0029, 0030–0039, …), and ranges land
  // in any order: a database migrated after 0031 must still take a 0021 that lands later.
  const migrator = new Migrator({ db, provider: new SqlFileMigrationProvider(), allowUnorderedMigrations: true });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`migration ${failed?.migrationName ?? '(unknown)'} failed: ${(error as Error).message}`, { cause: error });
  }
  return results ?? [];
}
