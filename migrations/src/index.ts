// The public surface of @notify/migrations: the schema (SQL files, their Kysely types), applying
// it, and reaching the server it lives on.
export { migrateToLatest, SqlFileMigrationProvider } from './migrate.js';
export {
  ensureDatabase,
  connectPostgres,
  connectFailure,
  DatabaseUnreachableError,
  redactUrl,
  databaseName,
  withDatabase,
} from './database.js';
export type {
  Database,
  AttemptsTable,
  ApiKeysTable,
  TemplatesTable,
  TemplateActivationsTable,
  SuppressionsTable,
  TenantsTable,
  TenantWebhookSecretsTable,
  BulkRetriesTable,
  EndpointsTable,
  OutboxMessagesView,
  Attempt,
  NewAttempt,
} from './schema.js';
