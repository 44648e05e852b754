import { prepared, type SqlExecutor } from '@notify/outbox';
import type { NotificationRecordOutcomeParams } from './notification-record-outcome.js';

/** Parameters of `notificationRecordOutcomes`: several attempts' results, each as for `notificationRecordOutcome`. */
export interface NotificationRecordOutcomesParams {
  /** At most one outcome per notification id (the caller defers a second one to a later call). */
  readonly outcomes: readonly NotificationRecordOutcomeParams[];
}

// `notificationRecordOutcome` for many rows, still one statement (so one transaction, one round
// trip and one commit for the whole group). Each input row's guarded UPDATE matches on its own
// (`state = 'queued' AND attempts = attempt − 1`); the attempt rows and the outbox rows are read
// from the UPDATE's RETURNING, so a row whose guard does not match writes nothing at all while
// the others are written. The outbox rows of the recorded outcomes are inserted in input order
// (each outcome's status event before its retry request).
//
// The rows are found by primary key only, whatever the statistics say: a Nested Loop over the
// input, one primary-key probe per outcome.
// - The input says it is one row: `ord` between 1 and 2^31 − 1, true of every row, is a range
//   PostgreSQL has no statistics for and estimates at 0.5 % (its default selectivity of a range).
//   A connection keeps the generic plan it settles on for its life, until an ANALYZE (or VACUUM,
//   or DDL) of notifications, and a service started on a new database settles in its first
//   seconds, while the table is empty and taken for ten pages (never analyzed). Estimated at ten
//   rows (unnest of an array parameter), the input was hash-joined against a sequential scan of
//   the table, which then read the whole table in every group commit: 5.2 ms a group of ~10 at
//   15,000 rows, growing with it, until an ANALYZE (pg_stat_statements over a 500/s p99-probe
//   window, session 37; with autovacuum off, for ever). Only statistics of an analyzed table of a
//   few pages (a probe is costed at ~8 pages' reads) make a scan look cheaper, and those are a
//   small table's, which autovacuum's next ANALYZE replaces as it grows (a never-analyzed table is
//   taken for ten pages at least). A custom plan costs the same as the generic one (one row either
//   way), so PostgreSQL settles on the generic one after its five custom ones.
// - The probe's only index condition is `t.id = i.id`: with `t.id = ANY($1)` beside it (once the
//   bound of the scan whichever join was chosen) the primary key's path looked dearer than a
//   walk of another index that ends in id, which the empty table's plan then took.
// - The guard's state is a join clause against the input (`i.from_state`, the constant 'queued'
//   of a materialized CTE), not a restriction `t.state = 'queued'`: as a restriction it matched
//   the partial indexes on queued rows, and a planner that believed few rows were queued
//   (statistics from before a backlog arrived, or none yet: autovacuum had not analyzed the table)
//   scanned every queued notification through one of them and hash-joined the group against it,
//   in every group commit of a drain (auto_explain, session 34: 33 of 34 slow plans, 15-50 ms
//   each with 10,000 queued).
//
// Rows are locked in the order the plan visits them: the input's, which is sorted by id (see
// `notificationRecordOutcomes`). Two groups lock shared rows in the same order; against other
// writers a deadlock is possible: it fails the group, which the writer then retries one outcome
// at a time.
//
// A hot statement: parsed once per connection (`prepared`). It returns only `ord`, so a migration
// adding a column does not break the prepared form.
//
// The outbox rows come as one JSON text (`json_to_recordset`), not as five arrays: node-postgres
// writes a JS array as an array literal, escaping every element with two regular expressions and
// building the literal by concatenation, and these rows' values and headers are JSON, so each of
// their quotes was escaped again (the largest allocation site of the service in a drain, with
// the dates below). JSON.stringify does that natively, in one string. The outcomes stay arrays:
// `unnest` of arrays is what the planner walks in order (above); `json_to_recordset` is estimated
// at 100 rows and planned as a hash join over the queued rows instead (EXPLAIN, generic plan).
// Their instants go as ISO texts: node-postgres formats a Date in an array with its own
// local-time code, where `toISOString` is native.
const SQL = prepared(
  'dispatcher_record_outcomes_v5',
  `
WITH input AS MATERIALIZED (
  SELECT i.*, 'queued'::text AS from_state
    FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[], $6::timestamptz[],
                $7::timestamptz[], $8::timestamptz[], $9::text[], $10::text[], $11::text[], $12::text[])
         WITH ORDINALITY AS i(id, attempt, state, dead_reason, last_error, next_attempt_at,
                             started_at, finished_at, outcome, error, provider_status, provider, ord)
   WHERE i.ord >= 1 AND i.ord <= 2147483647
), n AS (
  UPDATE notifications AS t
     SET state = i.state,
         attempts = i.attempt,
         dead_reason = i.dead_reason,
         last_error = i.last_error,
         next_attempt_at = i.next_attempt_at,
         sent_at = CASE WHEN i.state = 'sent' THEN i.finished_at ELSE NULL END,
         updated_at = i.finished_at
    FROM input AS i
   WHERE t.id = i.id AND t.state = i.from_state AND t.attempts = i.attempt - 1
  RETURNING i.ord
), a AS (
  INSERT INTO attempts (notification_id, attempt, started_at, finished_at, outcome, error, provider_status, provider)
  SELECT i.id, i.attempt, i.started_at, i.finished_at, i.outcome, i.error, i.provider_status, i.provider
    FROM n JOIN input AS i ON i.ord = n.ord
), o AS (
  INSERT INTO outbox (topic, key, value, headers)
  SELECT m.topic, m.key, m.value, m.headers
    FROM ROWS FROM (json_to_recordset($13::json) AS (owner int, topic text, key text, value text, headers jsonb))
         WITH ORDINALITY AS m(owner, topic, key, value, headers, ord)
   WHERE m.owner IN (SELECT n.ord FROM n)
   ORDER BY m.ord
)
SELECT ord::int AS ord FROM n`,
);

// Every text in the JSON is well-formed UTF-16, which PostgreSQL's json requires (JSON.stringify
// writes a lone surrogate as an escape json refuses): the values are JSON texts (JSON.stringify
// escapes any lone surrogate in them as ASCII), the keys and headers are built from the
// notification's stored fields, which PostgreSQL only holds as valid UTF-8. Free texts (errors)
// go in the arrays, which node-postgres encodes as UTF-8 (a lone surrogate becomes U+FFFD).

/**
 * Records several attempts in one statement: for each outcome, moves its notification from
 * `queued` (with `attempts = attempt − 1`) to the new state, inserts the attempt row and appends
 * the outbox rows, atomically for the whole group. Returns, per outcome in the order given,
 * whether it was recorded; false means its guard did not match and nothing of it was written
 * (the others are unaffected). Throws (writing nothing) when the statement fails.
 */
export async function notificationRecordOutcomes(db: SqlExecutor, params: NotificationRecordOutcomesParams): Promise<boolean[]> {
  const { outcomes } = params;
  const n = outcomes.length;
  if (n === 0) return [];
  // Lock order: by id (see SQL). `order[k]` is the caller's index of the k-th row sent.
  const order = new Array<number>(n);
  for (let i = 0; i < n; i++) order[i] = i;
  order.sort((a, b) => {
    const x = outcomes[a]!.id;
    const y = outcomes[b]!.id;
    return x < y ? -1 : x > y ? 1 : 0;
  });
  // One pass in that order fills a column per parameter. It runs once per group commit; as a map
  // per column V8 still found it hot and compiled it, callbacks inlined, in 55-105 ms, three
  // times over one cold and one warm drain of 10,000 (session 33); this form once, in 35 ms.
  const ids = new Array<string>(n);
  const attempts = new Array<number>(n);
  const states = new Array<string>(n);
  const deadReasons = new Array<string | null>(n);
  const lastErrors = new Array<string | null>(n);
  const nextAttemptAts = new Array<string | null>(n);
  const startedAts = new Array<string>(n);
  const finishedAts = new Array<string>(n);
  const attemptOutcomes = new Array<string>(n);
  const errors = new Array<string | null>(n);
  const providerStatuses = new Array<string | null>(n);
  const providers = new Array<string | null>(n);
  const messages: { owner: number; topic: string; key: string; value: string; headers: Readonly<Record<string, string>> }[] = [];
  for (let k = 0; k < n; k++) {
    const o = outcomes[order[k]!]!;
    // Sorted, so a repeated id is next to its twin.
    if (k > 0 && ids[k - 1] === o.id)
      throw new RangeError(`notificationRecordOutcomes: notification ${o.id} appears twice; record the second outcome in a later call`);
    ids[k] = o.id;
    attempts[k] = o.attempt;
    states[k] = o.state;
    deadReasons[k] = o.deadReason;
    lastErrors[k] = o.lastError;
    nextAttemptAts[k] = o.nextAttemptAt === null ? null : o.nextAttemptAt.toISOString();
    startedAts[k] = o.startedAt.toISOString();
    finishedAts[k] = o.finishedAt.toISOString();
    attemptOutcomes[k] = o.outcome;
    errors[k] = o.error;
    providerStatuses[k] = o.providerStatus;
    providers[k] = o.provider ?? null;
    // WITH ORDINALITY counts from 1
    for (const m of o.messages) messages.push({ owner: k + 1, topic: m.topic, key: m.key, value: m.value, headers: m.headers });
  }
  const { rows: recorded } = await db.query<{ ord: number }>(SQL, [
    ids,
    attempts,
    states,
    deadReasons,
    lastErrors,
    nextAttemptAts,
    startedAts,
    finishedAts,
    attemptOutcomes,
    errors,
    providerStatuses,
    providers,
    JSON.stringify(messages),
  ]);
  const result = new Array<boolean>(n).fill(false);
  for (const r of recorded) result[order[r.ord - 1]!] = true;
  return result;
}
