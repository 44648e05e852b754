import type { Channel, SqlExecutor } from '@notify/outbox';

/** An opt-out row. */
export interface SuppressionRow {
  readonly channel: Channel;
  readonly recipient: string;
  readonly category: string;
  readonly reason: string | null;
  readonly created_at: Date;
}

/** Parameters of `suppressionList`. */
export interface SuppressionListParams {
  readonly tenantId: string;
  readonly channel?: Channel | undefined;
  /** Normalized recipient. */
  readonly recipient?: string | undefined;
  /** One category ('*' included) only. */
  readonly category?: string | undefined;
  /** Only rows after this (channel, recipient, category), the cursor. */
  readonly after?: readonly [string, string, string] | undefined;
  readonly limit: number;
}

/**
 * A page of the tenant's opt-outs in primary-key order (channel, recipient, category): keyset
 * paging on the primary key, so every page is an index range scan however many rows there are.
 */
export async function suppressionList(db: SqlExecutor, params: SuppressionListParams): Promise<SuppressionRow[]> {
  const { rows } = await db.query<SuppressionRow>(
    `SELECT channel, recipient, category, reason, created_at
       FROM suppressions
      WHERE tenant_id = $1
        AND ($2::text IS NULL OR channel = $2)
        AND ($3::text IS NULL OR recipient = $3)
        AND ($4::text IS NULL OR (channel, recipient, category) > ($4, $5, $6))
        AND ($8::text IS NULL OR category = $8)
      ORDER BY channel, recipient, category
      LIMIT $7`,
    [
      params.tenantId,
      params.channel ?? null,
      params.recipient ?? null,
      params.after?.[0] ?? null,
      params.after?.[1] ?? null,
      params.after?.[2] ?? null,
      params.limit,
      params.category ?? null,
    ],
  );
  return rows;
}
