import type { SqlExecutor } from '@notify/outbox';

/** A bulk retry as stored. */
export interface BulkRetryRow {
  readonly id: string;
  readonly tenant_id: string;
  readonly idempotency_key: string | null;
  readonly filter: Record<string, unknown>;
  readonly requeued: number;
  readonly matched: number;
  readonly created_at: Date;
}

/** Claims (tenant, key) for a new bulk retry; returns false when the key is taken (a concurrent twin waits here until the first commits). */
export async function bulkRetryInsert(
  db: SqlExecutor,
  params: { id: string; tenantId: string; idempotencyKey: string | null; filter: unknown; apiKeyId: string | null; now: Date },
): Promise<boolean> {
  const { rows } = await db.query(
    `INSERT INTO bulk_retries (id, tenant_id, idempotency_key, filter, requeued, matched, api_key_id, created_at)
     VALUES ($1, $2, $3, $4::jsonb, 0, 0, $5, $6)
     ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
     RETURNING 1`,
    [params.id, params.tenantId, params.idempotencyKey, JSON.stringify(params.filter), params.apiKeyId, params.now],
  );
  return rows.length > 0;
}

/** Records the outcome of a bulk retry. */
export async function bulkRetryFinish(db: SqlExecutor, params: { id: string; requeued: number; matched: number }): Promise<void> {
  await db.query('UPDATE bulk_retries SET requeued = $2, matched = $3 WHERE id = $1', [params.id, params.requeued, params.matched]);
}

/** A tenant's bulk retry by id or by Idempotency-Key. */
export async function bulkRetryGet(
  db: SqlExecutor,
  params: { tenantId: string; id?: string; idempotencyKey?: string },
): Promise<BulkRetryRow | undefined> {
  const { rows } = await db.query<BulkRetryRow>(
    `SELECT id, tenant_id, idempotency_key, filter, requeued, matched, created_at FROM bulk_retries
      WHERE tenant_id = $1 AND ($2::text IS NULL OR id = $2) AND ($3::text IS NULL OR idempotency_key = $3)
      LIMIT 1`,
    [params.tenantId, params.id ?? null, params.idempotencyKey ?? null],
  );
  return rows[0];
}

/** The current states of the notifications a bulk retry re-queued. */
export async function bulkRetryProgress(db: SqlExecutor, params: { id: string }): Promise<Record<string, number>> {
  const { rows } = await db.query<{ state: string; n: number }>(
    `SELECT n.state, count(*)::int AS n
       FROM notification_actions a JOIN notifications n ON n.id = a.notification_id
      WHERE a.bulk_retry_id = $1
      GROUP BY n.state`,
    [params.id],
  );
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}
