import { prepared, type SqlExecutor } from '@notify/outbox';
import type { EndpointState, EndpointTarget } from '../endpoint.js';

/** What one dispatcher saw of one endpoint since its last write: the answers, summed up in order. */
export interface EndpointResultSummary {
  readonly id: string;
  readonly target: EndpointTarget;
  /** An attempt to it succeeded (the circuit closes, the failure streak restarts from `failures`). */
  readonly succeeded: boolean;
  /** Transient failures after the last success (all of them when `succeeded` is false). */
  readonly failures: number;
  /** Every answer that says something about health: successes and transient failures. */
  readonly answers: number;
  /** Transient failures among `answers`, wherever they fell. */
  readonly failed: number;
  /** The first of those failures. */
  readonly firstFailureAt: Date | null;
  readonly lastFailureAt: Date | null;
  readonly lastSuccessAt: Date | null;
  /** Provider status of the last failure ("503", "ECONNREFUSED"). */
  readonly lastErrorCode: string | null;
}

/**
 * Time constant of an endpoint's recent answer counts (`health_attempts`, `health_failures`): an
 * answer weighs e^(−age / 10 s), so the ratio follows the last ten seconds or so, and an endpoint
 * that is asked once a minute is judged on its latest answers alone.
 */
const HEALTH_DECAY_MS = 10_000;

/** Parameters of `endpointRecordResults`. */
export interface EndpointRecordResultsParams {
  readonly results: readonly EndpointResultSummary[];
  readonly now: Date;
  /** Consecutive transient failures that open the circuit (NOTIFY_ENDPOINT_FAILURE_THRESHOLD). */
  readonly failureThreshold: number;
  /**
   * ... if failures are also at least this share of the endpoint's recent answers
   * (NOTIFY_ENDPOINT_FAILURE_RATIO; 0: the streak alone decides).
   */
  readonly failureRatio: number;
  /** How long an open circuit waits before its first probe (NOTIFY_ENDPOINT_COOLDOWN). */
  readonly cooldownMs: number;
  /** A failure streak this long disables the endpoint (NOTIFY_ENDPOINT_DISABLE_AFTER). */
  readonly disableAfterMs: number;
  /**
   * Endpoints whose rows this caller has seen written: not created again (an id among them whose
   * row is gone after all is created and written in a second round). Absent: every row is created
   * when missing.
   */
  readonly known?: ReadonlySet<string>;
}

/**
 * Applies several endpoints' results in two statements (create the missing rows, skipped when
 * every endpoint is `known`; update):
 * - a success resets the streak and closes an open circuit;
 * - a failure adds to the streak; at `failureThreshold` an ok endpoint opens, its first probe
 *   due one cool-down later, if failures are also `failureRatio` or more of its recent answers
 *   (counts decaying with a time constant of HEALTH_DECAY_MS, kept in the row): a busy endpoint
 *   failing a share of its requests at random has streaks of any length, a dead one is at 100 %;
 * - a streak that began `disableAfterMs` ago or earlier disables the endpoint (`disabled_by`
 *   auto). A disabled endpoint stays disabled until an operator enables it.
 * Returns each endpoint's state after the write, with its probe time.
 */
export async function endpointRecordResults(
  db: SqlExecutor,
  params: EndpointRecordResultsParams,
): Promise<{ readonly id: string; readonly state: EndpointState; readonly probe_at: Date | null }[]> {
  if (params.results.length === 0) return [];
  const rs = [...params.results].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)); // lock order
  const { known } = params;
  const fresh = known ? rs.filter((r) => !known.has(r.id)) : rs;
  // The rows exist from the first write on: a busy dispatcher writes every 50 ms, and this INSERT
  // was half of those statements (and of their commits) in a backlog drain.
  if (fresh.length > 0) await createMissing(db, fresh, params.now);
  const rows = await updateHealth(db, rs, params);
  if (!known || rows.length === rs.length) return rows;
  const written = new Set(rows.map((r) => r.id));
  const gone = rs.filter((r) => known.has(r.id) && !written.has(r.id));
  if (gone.length === 0) return rows;
  return [...rows, ...(await endpointRecordResults(db, { ...params, results: gone, known: undefined }))];
}

async function createMissing(db: SqlExecutor, rs: readonly EndpointResultSummary[], now: Date): Promise<void> {
  await db.query(
    `INSERT INTO endpoints (id, tenant_id, channel, origin, provider, created_at, updated_at)
     SELECT i.id, i.tenant_id, i.channel, i.origin, i.provider, $6, $6
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS i(id, tenant_id, channel, origin, provider)
     ON CONFLICT (id) DO NOTHING`,
    [
      rs.map((r) => r.id),
      rs.map((r) => r.target.tenantId),
      rs.map((r) => r.target.channel),
      rs.map((r) => r.target.origin),
      rs.map((r) => r.target.provider),
      now,
    ],
  );
}

// The health update: one per dispatcher write (every 50 ms while any endpoint is answered, at
// a steady trickle one per few notifications), so parsed and planned once per connection
// (`prepared`). It returns named columns only, so a migration adding one does not change its result.
const UPDATE_HEALTH_SQL = prepared(
  'endpoint_record_health_v1',
  `WITH i AS (
     SELECT * FROM unnest($1::text[], $2::bool[], $3::int[], $4::timestamptz[], $5::timestamptz[], $6::timestamptz[], $7::text[],
                          $12::int[], $13::int[])
              AS i(id, succeeded, failures, first_failure_at, last_failure_at, last_success_at, code, answers, failed)
   ), d AS (
     SELECT i.*, e.state AS old_state, e.consecutive_failures, e.failing_since,
            -- the row's counts decayed to now: exp(-Δt/τ), capped at Δt = 50 τ (float8 exp underflows
            -- below e^-745); a row never counted has none
            CASE WHEN e.health_at IS NULL THEN 0
                 ELSE exp(-least(50, greatest(0, extract(epoch FROM $8::timestamptz - e.health_at)::float8 * 1000 / $14::float8))) END AS w,
            e.health_attempts, e.health_failures
       FROM endpoints e JOIN i ON i.id = e.id
      ORDER BY e.id
        FOR UPDATE OF e
   ), c AS (
     SELECT d.id, d.old_state, d.code, d.last_failure_at, d.last_success_at,
            d.health_attempts * d.w + d.answers AS ha,
            d.health_failures * d.w + d.failed AS hf,
            CASE WHEN d.succeeded THEN d.failures ELSE d.consecutive_failures + d.failures END AS nf,
            CASE WHEN d.failures = 0 AND d.succeeded THEN NULL
                 WHEN d.succeeded OR d.failing_since IS NULL THEN d.first_failure_at
                 ELSE d.failing_since END AS fs
       FROM d
   ), s AS (
     SELECT c.*,
            CASE WHEN c.old_state = 'disabled' THEN 'disabled'
                 WHEN c.fs IS NOT NULL AND c.nf > 0 AND c.fs <= $8::timestamptz - $11 * interval '1 millisecond' THEN 'disabled'
                 WHEN c.nf = 0 THEN 'ok'
                 WHEN c.old_state = 'open' THEN 'open'
                 WHEN c.nf >= $9 AND c.hf >= $15::float8 * c.ha THEN 'open'
                 ELSE 'ok' END AS ns
       FROM c
   )
   UPDATE endpoints e
      SET consecutive_failures = s.nf,
          health_attempts = s.ha,
          health_failures = s.hf,
          health_at = $8,
          failing_since = s.fs,
          last_error_code = coalesce(s.code, e.last_error_code),
          last_failure_at = greatest(e.last_failure_at, s.last_failure_at),
          last_success_at = greatest(e.last_success_at, s.last_success_at),
          state = s.ns,
          opened_at = CASE WHEN s.ns = 'open' THEN coalesce(e.opened_at, $8) END,
          probe_at = CASE WHEN s.ns <> 'open' THEN NULL
                          WHEN s.old_state = 'open' THEN e.probe_at
                          ELSE $8::timestamptz + $10 * interval '1 millisecond' END,
          disabled_at = CASE WHEN s.ns = 'disabled' THEN coalesce(e.disabled_at, $8) END,
          disabled_by = CASE WHEN s.ns = 'disabled' THEN coalesce(e.disabled_by, 'auto') END,
          updated_at = $8
     FROM s
    WHERE e.id = s.id
   RETURNING e.id, e.state, e.probe_at`,
);

async function updateHealth(
  db: SqlExecutor,
  rs: readonly EndpointResultSummary[],
  params: EndpointRecordResultsParams,
): Promise<{ readonly id: string; readonly state: EndpointState; readonly probe_at: Date | null }[]> {
  const { rows } = await db.query<{ id: string; state: EndpointState; probe_at: Date | null }>(UPDATE_HEALTH_SQL, [
    rs.map((r) => r.id),
    rs.map((r) => r.succeeded),
    rs.map((r) => r.failures),
    rs.map((r) => r.firstFailureAt),
    rs.map((r) => r.lastFailureAt),
    rs.map((r) => r.lastSuccessAt),
    rs.map((r) => r.lastErrorCode),
    params.now,
    params.failureThreshold,
    params.cooldownMs,
    params.disableAfterMs,
    rs.map((r) => r.answers),
    rs.map((r) => r.failed),
    HEALTH_DECAY_MS,
    params.failureRatio,
  ]);
  return rows;
}
