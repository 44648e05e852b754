import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `erasureInsert`. */
export interface ErasureInsertParams {
  readonly id: string;
  readonly tenantId: string;
  /** sha256 (hex) of the trimmed, lower-cased address: never the address. */
  readonly recipientSha256: string;
  readonly counts: Readonly<Record<string, number>>;
  readonly apiKeyId: string | null;
  readonly now: Date;
}

/** Records an erasure for audit, in the transaction that made it. */
export async function erasureInsert(db: SqlExecutor, params: ErasureInsertParams): Promise<void> {
  await db.query(`INSERT INTO erasures (id, tenant_id, recipient_sha256, counts, api_key_id, created_at) VALUES ($1, $2, $3, $4, $5, $6)`, [
    params.id,
    params.tenantId,
    params.recipientSha256,
    JSON.stringify(params.counts),
    params.apiKeyId,
    params.now,
  ]);
}
