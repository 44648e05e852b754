import type { FieldIssue, SqlExecutor } from '@notify/outbox';

/** Parameters of `intentCheck`. */
export interface IntentCheckParams {
  /** The intent as enqueue would send it (with `tenant_id`). */
  readonly intent: Record<string, unknown>;
  readonly now: Date;
}

/**
 * Why PostgreSQL would refuse `intent` (`notify_item_check`, migrations 0006 and 0040: the rules
 * every enqueuer meets, delivery options included), or null when it would queue it. Writes nothing. For requests the API refuses
 * for its own reasons first, so the caller still hears about every other problem at once.
 */
export async function intentCheck(
  db: SqlExecutor,
  params: IntentCheckParams,
): Promise<{ readonly code: string; readonly errors: readonly FieldIssue[] } | null> {
  const { rows } = await db.query<{ refusal: { code: string; errors: FieldIssue[] } | null }>(
    'SELECT notify_item_check($1::jsonb, $2) AS refusal',
    [JSON.stringify(params.intent), params.now],
  );
  return rows[0]?.refusal ?? null;
}
