import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `recipientErase`. */
export interface RecipientEraseParams {
  readonly tenantId: string;
  /** The notifications addressed to the recipient (locked by `recipientNotificationsLock`). */
  readonly ids: readonly string[];
  readonly to: string;
  /** Delete the recipient's opt-outs too (default: keep them, so the address stays suppressed). */
  readonly deleteSuppressions: boolean;
}

/** Rows changed, by kind. */
export interface RecipientEraseCounts {
  readonly notifications: number;
  readonly attempts: number;
  readonly outbox_rows: number;
  readonly refused_rows: number;
  readonly callback_deliveries: number;
  readonly bulk_retries: number;
  readonly suppressions_deleted: number;
  readonly suppressions_kept: number;
}

/** A case-insensitive regular expression matching `text` literally. */
function literalPattern(text: string): string {
  return text.trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Erases the recipient's address and content from every stored row of the tenant, in one
 * statement, keeping ids, states, counts and times:
 * - notifications: recipient `[erased]`; subject, data null; body `''` (a template notification
 *   keeps its template name); metadata `{}`; last_error `[erased]`; request_hash `erased` (a repeat
 *   of the original request with its Idempotency-Key is then a conflict, never a second send);
 * - attempts: error `[erased]`, provider_status too where it quotes the address;
 * - outbox rows (not yet purged), refused outbox rows, callback deliveries: every occurrence of the
 *   address in the message text (status events carry last_error, which may quote it);
 * - bulk retries whose filter names the address (`to`, `last_error_prefix`);
 * - opt-outs: deleted only when asked, else counted as kept.
 */
export async function recipientErase(db: SqlExecutor, params: RecipientEraseParams): Promise<RecipientEraseCounts> {
  const { rows } = await db.query<RecipientEraseCounts>(
    `WITH n AS (
       UPDATE notifications
          SET recipient = '[erased]', subject = NULL, body = CASE WHEN body IS NULL THEN NULL ELSE '' END, data = NULL,
              metadata = '{}'::jsonb, last_error = CASE WHEN last_error IS NULL THEN NULL ELSE '[erased]' END,
              request_hash = CASE WHEN request_hash IS NULL THEN NULL ELSE 'erased' END
        WHERE id = ANY ($1::text[])
       RETURNING 1),
     a AS (
       UPDATE attempts
          SET error = CASE WHEN error IS NULL THEN NULL ELSE '[erased]' END,
              provider_status = CASE WHEN provider_status ~* $3 THEN '[erased]' ELSE provider_status END
        WHERE notification_id = ANY ($1::text[]) AND (error IS NOT NULL OR provider_status ~* $3)
       RETURNING 1),
     o AS (
       UPDATE outbox SET value = regexp_replace(value, $3, '[erased]', 'gi')
        WHERE headers ->> 'notification-id' = ANY ($1::text[]) AND value ~* $3
       RETURNING 1),
     r AS (
       UPDATE outbox_refused SET value = regexp_replace(value, $3, '[erased]', 'gi')
        WHERE notification_id = ANY ($1::text[]) AND value ~* $3
       RETURNING 1),
     c AS (
       UPDATE callback_deliveries SET payload = regexp_replace(payload, $3, '[erased]', 'gi')
        WHERE notification_id = ANY ($1::text[]) AND payload ~* $3
       RETURNING 1),
     b AS (
       UPDATE bulk_retries SET filter = regexp_replace(filter::text, $3, '[erased]', 'gi')::jsonb
        WHERE tenant_id = $2 AND filter::text ~* $3
       RETURNING 1),
     s AS (
       DELETE FROM suppressions WHERE $5 AND tenant_id = $2 AND lower(btrim(recipient)) = lower(btrim($4))
       RETURNING 1)
     SELECT (SELECT count(*) FROM n)::int AS notifications, (SELECT count(*) FROM a)::int AS attempts,
            (SELECT count(*) FROM o)::int AS outbox_rows, (SELECT count(*) FROM r)::int AS refused_rows,
            (SELECT count(*) FROM c)::int AS callback_deliveries, (SELECT count(*) FROM b)::int AS bulk_retries,
            (SELECT count(*) FROM s)::int AS suppressions_deleted,
            (SELECT count(*) FROM suppressions WHERE NOT $5 AND tenant_id = $2 AND lower(btrim(recipient)) = lower(btrim($4)))::int
              AS suppressions_kept`,
    [params.ids, params.tenantId, literalPattern(params.to), params.to, params.deleteSuppressions],
  );
  return rows[0]!;
}
