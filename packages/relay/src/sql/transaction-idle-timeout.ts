import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `transactionIdleTimeout`. */
export interface TransactionIdleTimeoutParams {
  readonly ms: number;
}

/**
 * Sets `idle_in_transaction_session_timeout` for the rest of the current transaction only. The
 * claim transaction waits on Kafka while it holds its lease locks; if this process hangs there,
 * the server ends the session after `ms`, the locks go, and another relay can take the slots.
 */
export async function transactionIdleTimeout(db: SqlExecutor, params: TransactionIdleTimeoutParams): Promise<void> {
  await db.query(`SELECT set_config('idle_in_transaction_session_timeout', $1, true)`, [`${Math.max(1, Math.round(params.ms))}ms`]);
}
