import type { RetryConfig } from '@notify/dispatcher';
import type { SqlExecutor } from '@notify/outbox';
import { backoffDelayMs } from '@notify/runtime';
import { waitFor } from '../wait.js';

/**
 * One delivery as the receiver saw it: the Standard Webhooks `webhook-id` (the notification id,
 * stable across retries) and whether the receiver *accepted* it — read the whole request and
 * decided to answer 2xx, whether or not that answer reached the sender in time. A request the
 * receiver held without answering or reset is not a delivery.
 */
export interface ReceivedDelivery {
  readonly webhookId: string;
  readonly accepted: boolean;
  /** When the request arrived (receiver clock, same machine). */
  readonly at: Date;
}

/** One line of the per-scenario table printed at the end of `pnpm test:chaos`. */
export interface ChaosRow {
  readonly scenario: string;
  /** Notifications the scenario enqueued. */
  readonly notifications: number;
  /** Enqueued but not accounted for: missing, stuck (queued and overdue), or `sent` without the receiver having it. Must be 0. */
  readonly lost: number;
  /** Deliveries the receiver accepted beyond the first, per `webhook-id`. */
  readonly duplicates: number;
  /**
   * Of those, the ones with no failed attempt in the history to explain them: the same attempt
   * delivered twice (a crash between the provider call and the commit, a rebalance, a message
   * published twice). The rest followed an attempt the service recorded as failed although the
   * receiver had it (an answer after the timeout, a reset after the request was read).
   */
  readonly redelivered: number;
  /** Largest `attempt start − due time` over every recorded attempt, in ms (see `AuditReport.maxLatenessMs`). */
  readonly maxLatenessMs: number;
  readonly sent: number;
  readonly dead: number;
  /** Queued with a future due time when the audit ran (legitimately waiting). */
  readonly waiting: number;
  /** Largest peak RSS (VmHWM) of the stack's processes alive at the end, in MiB; set by `runScenario`. */
  readonly peakRssMb?: number;
  /**
   * Kafka group joins of the dispatchers' normal lane beyond each process's first (rebalances and
   * consumer restarts, summed over the dispatcher processes); set by `runScenario`.
   */
  readonly rejoins?: number;
}

/** What the audit found. `problems` lists every violated invariant in words; a correct run has none. */
export interface AuditReport {
  readonly row: ChaosRow;
  readonly problems: readonly string[];
  /** Attempts that started before they were due (must be 0: "never before it is due"). */
  readonly early: number;
  /** Notification ids the receiver accepted more than once, with the count. */
  readonly duplicated: ReadonlyMap<string, number>;
  /** By dead reason. */
  readonly deadReasons: Readonly<Record<string, number>>;
  readonly lostIds: readonly string[];
}

/** Inputs of `auditRun`. */
export interface AuditParams {
  readonly scenario: string;
  /** The scenario's database (its own: every notification in it belongs to the scenario). */
  readonly db: SqlExecutor;
  /** The ids the scenario enqueued; every one must be in the database. */
  readonly ids: readonly string[];
  /** Everything the receiver(s) logged. */
  readonly deliveries: readonly ReceivedDelivery[];
  /** The retry policy the stack ran with, to rebuild each attempt's due time. */
  readonly retry: Pick<RetryConfig, 'baseDelayMs' | 'maxDelayMs' | 'jitter'>;
  /** When an unpublished outbox row counts as stranded. Default 10 s. */
  readonly strandedAfterMs?: number;
  /**
   * Dead notifications the scenario allows (e.g. receivers that never answer); default 0. More
   * dead than this is a problem: in a run where the receiver eventually answers, dead means the
   * service gave up on something it should have delivered.
   */
  readonly allowedDead?: number;
}

interface NotificationRow {
  id: string;
  state: string;
  dead_reason: string | null;
  attempts: number;
  max_attempts: number;
  next_attempt_at: Date | null;
  sent_at: Date | null;
  created_at: Date;
  overdue: boolean;
}

interface AttemptRow {
  notification_id: string;
  attempt: number;
  started_at: Date;
  finished_at: Date;
  outcome: string;
}

const TERMINAL = new Set(['sent', 'dead', 'cancelled']);
/** Timestamps go through PostgreSQL's microseconds and JS milliseconds: allow one ms of rounding. */
const EARLY_SLACK_MS = 1;

/**
 * The audit every fault scenario ends with. Reads the scenario's database and the receiver's
 * log and checks, per notification:
 * - it exists and is terminal (sent, dead, cancelled) or legitimately queued with a future due
 *   time — queued and overdue counts as lost;
 * - `sent` ones reached the receiver at least once (by `webhook-id`); extra accepted deliveries
 *   are counted as duplicates;
 * - the attempt count equals its attempt history, numbered 1..n, with one `sent` outcome exactly
 *   when the state is sent, and no attempt started before it was due;
 * and, for the whole run: no outbox row left unpublished for longer than `strandedAfterMs`, and
 * the receiver got nothing that was never enqueued.
 */
export async function auditRun(params: AuditParams): Promise<AuditReport> {
  const { db, ids, deliveries, retry } = params;
  const strandedAfterMs = params.strandedAfterMs ?? 10_000;
  const problems: string[] = [];

  // `overdue` is computed by the database, against its own clock, like the dispatcher's due checks.
  const { rows: notifications } = await db.query<NotificationRow>(
    `SELECT id, state, dead_reason, attempts, max_attempts, next_attempt_at, sent_at, created_at,
            (state = 'queued' AND next_attempt_at <= now()) AS overdue
       FROM notifications`,
    [],
  );
  const { rows: attempts } = await db.query<AttemptRow>(
    'SELECT notification_id, attempt, started_at, finished_at, outcome FROM attempts ORDER BY notification_id, attempt',
    [],
  );
  const { rows: stranded } = await db.query<{ count: number; oldest: Date | null }>(
    `SELECT count(*)::int AS count, min(created_at) AS oldest FROM outbox
      WHERE published_at IS NULL AND created_at < now() - make_interval(secs => $1::double precision / 1000)`,
    [strandedAfterMs],
  );

  const byId = new Map(notifications.map((n) => [n.id, n]));
  const historyOf = new Map<string, AttemptRow[]>();
  for (const a of attempts) {
    const list = historyOf.get(a.notification_id) ?? [];
    list.push(a);
    historyOf.set(a.notification_id, list);
  }
  const accepted = new Map<string, number>();
  for (const d of deliveries) if (d.accepted) accepted.set(d.webhookId, (accepted.get(d.webhookId) ?? 0) + 1);

  const lostIds: string[] = [];
  const lose = (id: string, why: string) => {
    lostIds.push(id);
    if (lostIds.length <= 20) problems.push(`lost ${id}: ${why}`);
  };
  let sent = 0;
  let dead = 0;
  let waiting = 0;
  let early = 0;
  let maxLatenessMs = 0;
  const deadReasons: Record<string, number> = {};
  const known = new Set(ids);

  for (const id of ids) {
    const n = byId.get(id);
    if (!n) {
      lose(id, 'not in the database');
      continue;
    }
    const history = historyOf.get(id) ?? [];
    if (n.state === 'queued') {
      if (n.overdue) lose(id, `queued with attempts=${n.attempts} and next_attempt_at ${n.next_attempt_at?.toISOString()} in the past`);
      else waiting++;
    } else if (!TERMINAL.has(n.state)) {
      lose(id, `unknown state ${n.state}`);
    }
    if (n.state === 'sent') {
      sent++;
      if (!accepted.has(id)) lose(id, 'state sent, but the receiver never accepted it');
    }
    if (n.state === 'dead') {
      dead++;
      deadReasons[n.dead_reason ?? '?'] = (deadReasons[n.dead_reason ?? '?'] ?? 0) + 1;
    }

    // The attempt history must be exactly what the counter says.
    if (history.length !== n.attempts) problems.push(`${id}: attempts=${n.attempts} but ${history.length} attempt rows`);
    history.forEach((a, i) => {
      if (a.attempt !== i + 1) problems.push(`${id}: attempt rows are not numbered 1..n (row ${i + 1} is attempt ${a.attempt})`);
    });
    const sentOutcomes = history.filter((a) => a.outcome === 'sent').length;
    if ((n.state === 'sent') !== (sentOutcomes === 1) || sentOutcomes > 1) {
      problems.push(`${id}: state ${n.state} with ${sentOutcomes} 'sent' attempts`);
    }

    // Lateness: attempt 1 is due at creation; attempt k at attempt k−1's finish plus the backoff
    // (with jitter, the shortest delay it could have drawn: the figure is then an upper bound).
    history.forEach((a, i) => {
      const prev = history[i - 1];
      const due =
        prev === undefined
          ? n.created_at.getTime()
          : prev.finished_at.getTime() +
            backoffDelayMs({
              now: prev.finished_at,
              attempt: prev.attempt,
              baseMs: retry.baseDelayMs,
              maxMs: retry.maxDelayMs,
              jitter: 0,
              random: () => 0,
            }) *
              (1 - retry.jitter);
      const lateness = a.started_at.getTime() - due;
      if (retry.jitter === 0 && lateness < -EARLY_SLACK_MS) {
        early++;
        if (early <= 5) problems.push(`${id}: attempt ${a.attempt} started ${-lateness} ms before it was due`);
      }
      maxLatenessMs = Math.max(maxLatenessMs, lateness);
    });
  }

  for (const n of notifications) {
    if (!known.has(n.id)) problems.push(`${n.id}: in the database but not enqueued by the scenario`);
  }
  for (const webhookId of accepted.keys()) {
    if (!known.has(webhookId)) problems.push(`the receiver accepted webhook-id ${webhookId}, which the scenario never enqueued`);
  }
  const strandedRow = stranded[0];
  if (strandedRow && strandedRow.count > 0) {
    problems.push(
      `${strandedRow.count} outbox rows unpublished for more than ${strandedAfterMs} ms (oldest from ${strandedRow.oldest?.toISOString()})`,
    );
  }
  if (lostIds.length > 20) problems.push(`… and ${lostIds.length - 20} more lost`);
  if (dead > (params.allowedDead ?? 0)) {
    problems.push(`${dead} notifications dead (${JSON.stringify(deadReasons)}), at most ${params.allowedDead ?? 0} expected`);
  }

  const duplicated = new Map<string, number>();
  let duplicates = 0;
  let redelivered = 0;
  for (const [id, count] of accepted) {
    if (count > 1 && known.has(id)) {
      duplicated.set(id, count);
      duplicates += count - 1;
      const failed = (historyOf.get(id) ?? []).filter((a) => a.outcome !== 'sent').length;
      redelivered += Math.max(0, count - 1 - failed);
    }
  }

  return {
    row: {
      scenario: params.scenario,
      notifications: ids.length,
      lost: lostIds.length,
      duplicates,
      redelivered,
      maxLatenessMs: Math.round(maxLatenessMs),
      sent,
      dead,
      waiting,
    },
    problems,
    early,
    duplicated,
    deadReasons,
    lostIds,
  };
}

/**
 * Waits until the run has settled: no notification queued and overdue, no unpublished outbox
 * row, and `extra` (e.g. "the receiver has every sent one") holds. Returns false at the deadline
 * instead of throwing, so the audit still runs and says what is missing.
 */
export async function waitForSettled(
  db: SqlExecutor,
  { timeoutMs, extra }: { readonly timeoutMs: number; readonly extra?: () => boolean | Promise<boolean> },
): Promise<boolean> {
  try {
    await waitFor(
      async () => {
        const { rows } = await db.query<{ pending: number; unpublished: number }>(
          `SELECT (SELECT count(*)::int FROM notifications WHERE state = 'queued' AND next_attempt_at <= now()) AS pending,
                  (SELECT count(*)::int FROM outbox WHERE published_at IS NULL) AS unpublished`,
          [],
        );
        const r = rows[0];
        if (!r || r.pending > 0 || r.unpublished > 0) return false;
        return extra ? await extra() : true;
      },
      { timeoutMs, intervalMs: 250, message: 'the run to settle' },
    );
    return true;
  } catch {
    return false;
  }
}

/** The table, as printed at the end of `pnpm test:chaos`. */
export function formatChaosTable(rows: readonly ChaosRow[]): string {
  const header = [
    'scenario',
    'notifications',
    'lost',
    'duplicates',
    'of which redelivered',
    'max lateness',
    'sent',
    'dead',
    'waiting',
    'peak RSS',
    'rejoins',
  ];
  const lines = rows.map((r) => [
    r.scenario,
    String(r.notifications),
    String(r.lost),
    String(r.duplicates),
    String(r.redelivered),
    formatMs(r.maxLatenessMs),
    String(r.sent),
    String(r.dead),
    String(r.waiting),
    r.peakRssMb === undefined ? '—' : `${r.peakRssMb} MiB`,
    r.rejoins === undefined ? '—' : String(r.rejoins),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  return [
    fmt(header),
    `|${widths.map((w, i) => (i === 0 ? `${'-'.repeat(w + 1)}-` : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
    ...lines.map(fmt),
  ].join('\n');
}

function formatMs(ms: number): string {
  return ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${ms} ms`;
}
