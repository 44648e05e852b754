import { prepared, type SqlExecutor } from '@notify/outbox';
import { normalizeRecipient } from '@notify/runtime';
import type { SuppressionMatchParams, SuppressionRecord } from '@notify/runtime';

/** Parameters of `suppressionMatchMany`. */
export interface SuppressionMatchManyParams {
  readonly checks: readonly SuppressionMatchParams[];
}

// A hot statement (one per batch of prepared notifications): parsed and planned once per connection.
const SQL = prepared(
  'dispatcher_suppression_match_many_v1',
  `SELECT k.ord::int AS ord, s.category, s.reason, s.created_at
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS k(tenant_id, channel, recipient, category, ord)
     CROSS JOIN LATERAL (
       SELECT category, reason, created_at
         FROM suppressions
        WHERE tenant_id = k.tenant_id AND channel = k.channel AND recipient = k.recipient
          AND (category = '*' OR category = k.category)
        ORDER BY (category = '*') DESC
        LIMIT 1
     ) AS s`,
);

/**
 * `suppressionMatch` for many notifications in one round trip: per check, in the order given,
 * the opt-out that applies (a row for the same tenant, channel and normalized recipient whose
 * category is '*' or the check's own; channel-wide wins), or null. One primary-key probe per
 * check, as in the single query (a LATERAL subquery with the same WHERE, ORDER BY and LIMIT).
 */
export async function suppressionMatchMany(db: SqlExecutor, params: SuppressionMatchManyParams): Promise<(SuppressionRecord | null)[]> {
  const { checks } = params;
  if (checks.length === 0) return [];
  const { rows } = await db.query<{ ord: number; category: string; reason: string | null; created_at: Date }>(SQL, [
    checks.map((c) => c.tenantId),
    checks.map((c) => c.channel),
    checks.map((c) => normalizeRecipient(c.channel, c.recipient)),
    checks.map((c) => c.category),
  ]);
  const out = new Array<SuppressionRecord | null>(checks.length).fill(null);
  for (const r of rows) out[r.ord - 1] = { category: r.category, reason: r.reason, createdAt: r.created_at };
  return out;
}
