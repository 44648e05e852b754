// The public surface of @notify/migrations.
export { migrateToLatest, SqlFileMigrationProvider } from './migrate.js';
export { ensureDatabase, connectPostgres, DatabaseUnreachableError, redactUrl, databaseName, withDatabase } from './database.js';
