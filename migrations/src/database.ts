import pg from 'pg';

/** PostgreSQL did not answer; the message is one line a person can act on. */
export class DatabaseUnreachableError extends Error {
  readonly code = 'database_unreachable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DatabaseUnreachableError';
  }
}

/** Query parameters of a connection URL that hold a secret (pg-connection-string reads them as libpq does). */
// Query parameters whose names say they carry a secret: pg's password and sslpassword, and what
// provider URLs carry (an SMS gateway's ?api_key= or ?token=, a signature, credentials).
const SECRET_PARAMETER = /pass|secret|token|key|auth|sig|credential/i;

/**
 * The URL without its password (in the user part) and without the value of every query parameter
 * whose name says it is a secret (`?password=`, `?api_key=`, `?token=`, …), for messages and logs.
 */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    for (const name of new Set(u.searchParams.keys())) if (SECRET_PARAMETER.test(name)) u.searchParams.set(name, '***');
    return u.toString();
  } catch {
    return '(unparseable DATABASE_URL)';
  }
}

/** The database name a URL points at. */
export function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.replace(/^\//, '')) || 'postgres';
}

/** The same server, another database. */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(name)}`;
  return u.toString();
}

/**
 * Opens one client to `url`. Throws `DatabaseUnreachableError` (one line, the URL without its
 * password) when it cannot connect; a missing database (SQLSTATE 3D000) is rethrown as pg's own
 * error for the caller to handle. The caller ends the client.
 */
export async function connectPostgres(url: string, timeoutMs: number): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => {});
  try {
    await client.connect();
    return client;
  } catch (err) {
    if ((err as { code?: unknown }).code === '3D000') throw err; // database does not exist: the caller handles it
    throw new DatabaseUnreachableError(connectFailure(url, err), { cause: err });
  }
}

/**
 * What went wrong connecting to `url`, as one line a person can act on. A server that answered
 * with an error (a login refused, too many connections: it carries a SQLSTATE) is named as such,
 * with PostgreSQL's own message; so is a failure of the connection's set-up (TLS: pg's message, no
 * code); only a server that does not answer gets "start it".
 */
export function connectFailure(url: string, err: unknown): string {
  const where = redactUrl(url);
  const { code, message } = err as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message.split('\n')[0] : String(err);
  if (err instanceof pg.DatabaseError) {
    return `PostgreSQL at ${where} refused the connection: ${text} (SQLSTATE ${String(code)}); check the user, password and database of DATABASE_URL`;
  }
  if (typeof code === 'string' || /timeout|terminated/i.test(text ?? '')) {
    return `cannot reach PostgreSQL at ${where} (${typeof code === 'string' ? code : text}); start it or set DATABASE_URL`;
  }
  return `cannot connect to PostgreSQL at ${where}: ${text}; check DATABASE_URL (sslmode and the other connection settings)`;
}

/**
 * Makes sure the database in `url` exists, creating it (through the server's `postgres`
 * database) when it does not. Throws `DatabaseUnreachableError` when no server answers.
 */
export async function ensureDatabase(url: string, { timeoutMs = 5_000 } = {}): Promise<{ created: boolean }> {
  try {
    const client = await connectPostgres(url, timeoutMs);
    await client.end();
    return { created: false };
  } catch (err) {
    if ((err as { code?: string }).code !== '3D000') throw err;
  }
  const admin = await connectPostgres(withDatabase(url, 'postgres'), timeoutMs);
  try {
    const name = databaseName(url);
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    return { created: true };
  } catch (err) {
    if ((err as { code?: string }).code === '42P04') return { created: false }; // created concurrently
    throw err;
  } finally {
    await admin.end();
  }
}
