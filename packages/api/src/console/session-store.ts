import type { SqlExecutor } from '@notify/outbox';

/** A signed-in console session. */
export interface ConsoleSession {
  readonly tenantId: string;
  readonly apiKeyId: string;
  readonly csrfToken: string;
  readonly expiresAt: Date;
}

/** Stores a session under the sha256 of its cookie value, and purges expired ones. */
export async function consoleSessionInsert(
  db: SqlExecutor,
  params: { tokenHash: string; tenantId: string; apiKeyId: string; csrfToken: string; now: Date; expiresAt: Date },
): Promise<void> {
  await db.query('DELETE FROM console_sessions WHERE expires_at <= $1', [params.now]);
  await db.query(
    `INSERT INTO console_sessions (token_hash, tenant_id, api_key_id, csrf_token, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
    [params.tokenHash, params.tenantId, params.apiKeyId, params.csrfToken, params.now, params.expiresAt],
  );
}

/** The live session for a cookie hash: not expired, and its API key not revoked. */
export async function consoleSessionGet(db: SqlExecutor, params: { tokenHash: string; now: Date }): Promise<ConsoleSession | undefined> {
  const { rows } = await db.query<{ tenant_id: string; api_key_id: string; csrf_token: string; expires_at: Date }>(
    `SELECT s.tenant_id, s.api_key_id, s.csrf_token, s.expires_at
       FROM console_sessions s JOIN api_keys k ON k.id = s.api_key_id
      WHERE s.token_hash = $1 AND s.expires_at > $2 AND k.revoked_at IS NULL`,
    [params.tokenHash, params.now],
  );
  const r = rows[0];
  return r && { tenantId: r.tenant_id, apiKeyId: r.api_key_id, csrfToken: r.csrf_token, expiresAt: new Date(r.expires_at) };
}

/** Ends a session (sign-out). */
export async function consoleSessionDelete(db: SqlExecutor, params: { tokenHash: string }): Promise<void> {
  await db.query('DELETE FROM console_sessions WHERE token_hash = $1', [params.tokenHash]);
}
