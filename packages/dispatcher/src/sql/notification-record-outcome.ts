import type { AttemptOutcome, DeadReason, SqlExecutor } from '@notify/outbox';
import type { OutboxMessage } from '@notify/contract';

/** Parameters of `notificationRecordOutcome`: one attempt's result and everything that follows from it. */
export interface NotificationRecordOutcomeParams {
  readonly id: string;
  /** The attempt that was made; the row must still have `attempts = attempt − 1`. */
  readonly attempt: number;
  readonly state: 'queued' | 'sent' | 'dead';
  readonly deadReason: DeadReason | null;
  readonly lastError: string | null;
  /** Non-null exactly when `state` is queued (notifications_queued_iff_next_attempt, checked by the notifications_invariants trigger). */
  readonly nextAttemptAt: Date | null;
  readonly startedAt: Date;
  readonly finishedAt: Date;
  readonly outcome: AttemptOutcome;
  readonly error: string | null;
  readonly providerStatus: string | null;
  /** Which provider answered: primary, fallback, or null when none was called. */
  readonly provider?: 'primary' | 'fallback' | null;
  /** Outbox rows to append: the status event, and the retry request when queued. */
  readonly messages: readonly OutboxMessage[];
}

// One statement, so one transaction and one round trip: the guarded state change, the attempt
// row and the outbox rows. The attempt and outbox inserts read from the UPDATE's RETURNING, so
// when the guard does not match (the notification moved on: a duplicate or a concurrent
// delivery recorded this attempt first) nothing at all is written.
const SQL = `
WITH n AS (
  UPDATE notifications
     SET state = $3::text,
         attempts = $2::int,
         dead_reason = $4::text,
         last_error = $5::text,
         next_attempt_at = $6::timestamptz,
         sent_at = CASE WHEN $3::text = 'sent' THEN $8::timestamptz ELSE NULL END,
         updated_at = $8::timestamptz
   WHERE id = $1 AND state = 'queued' AND attempts = $2::int - 1
  RETURNING id
), a AS (
  INSERT INTO attempts (notification_id, attempt, started_at, finished_at, outcome, error, provider_status, provider)
  SELECT n.id, $2::int, $7::timestamptz, $8::timestamptz, $9::text, $10::text, $11::text, $16::text FROM n
), o AS (
  INSERT INTO outbox (topic, key, value, headers)
  SELECT m.topic, m.key, m.value, m.headers
    FROM n, unnest($12::text[], $13::text[], $14::text[], $15::jsonb[]) WITH ORDINALITY AS m(topic, key, value, headers, ord)
   ORDER BY m.ord
)
SELECT count(*)::int AS updated FROM n`;

/**
 * Records one attempt: moves the notification from `queued` (with `attempts = attempt − 1`) to
 * its new state, inserts the attempt row and appends the outbox rows, atomically. Returns false
 * when the guard did not match, in which case nothing was written (duplicates are harmless).
 */
export async function notificationRecordOutcome(db: SqlExecutor, params: NotificationRecordOutcomeParams): Promise<boolean> {
  const { rows } = await db.query<{ updated: number }>(SQL, [
    params.id,
    params.attempt,
    params.state,
    params.deadReason,
    params.lastError,
    params.nextAttemptAt,
    params.startedAt,
    params.finishedAt,
    params.outcome,
    params.error,
    params.providerStatus,
    params.messages.map((m) => m.topic),
    params.messages.map((m) => m.key),
    params.messages.map((m) => m.value),
    params.messages.map((m) => JSON.stringify(m.headers)),
    params.provider ?? null,
  ]);
  return (rows[0]?.updated ?? 0) === 1;
}
