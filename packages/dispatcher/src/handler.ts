import { performance } from 'node:perf_hooks';
import { buildDeliveryRequest } from '@notify/contract';
import { fromKysely, isTerminal, outboxInsert, type Channel } from '@notify/outbox';
import { type Clock, type Logger } from '@notify/runtime';
import { type Database } from '@notify/migrations';
import type { Kysely } from 'kysely';
import { createBatchLoader, type BatchLoader } from './batch-loader.js';
import { BATCHING_DEFAULTS, type DispatcherConfig } from './config.js';
import type { ContentPreparer, Prepared } from './content/content.js';
import { errorMessage } from '@notify/runtime';
import type { DispatcherEvents } from './events.js';
import {
  parseFailureCode,
  parseInboundRequest,
  type HandleResult,
  type HandlerHooks,
  type InboundMessage,
  type SkipReason,
  type MessageHandler,
} from './message.js';
import { deliveryTraceId } from './middleware/tracing.js';
import { planOutcome, type AttemptResult } from './outcome.js';
import { callProvider } from './provider-call.js';
import { endpointTargetOf, type EndpointGate, type Provider, type ProviderRole, type SendResult } from '@notify/providers';
import { createOutcomeWriter, type OutcomeWriter } from './outcome-writer.js';
import { dueOutOfRange, tierFor } from './retry/delay-topics.js';
import { notificationDefer } from './sql/notification-defer.js';
import { notificationFindQueuedPredecessor } from './sql/notification-find-queued-predecessor.js';
import { deliveryOptOut, notificationGetMany, type DeliveryNotification, type DeliveryRow } from './sql/notification-get-many.js';

/** What the delivery handler needs. */
export interface DeliveryHandlerDeps {
  readonly db: Kysely<Database>;
  readonly providers: Partial<Record<Channel, Provider>>;
  /** A channel's second provider (NOTIFY_SMTP_FALLBACK_URL, NOTIFY_SMS_FALLBACK_URL), tried after the primary's transient failure or while its circuit is open. */
  readonly fallbacks?: Partial<Record<Channel, Provider>>;
  /** Endpoint health: circuit breaker, auto-disable, shared rate limits (docs/endpoints.md). Absent: none. */
  readonly endpoints?: EndpointGate;
  readonly content: ContentPreparer;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly events: DispatcherEvents;
  /** Uniform in [0, 1) for jitter. Default Math.random. */
  readonly random?: () => number;
  readonly config: Pick<DispatcherConfig, 'retry' | 'tiers' | 'sendTimeoutMs'> &
    Partial<Pick<DispatcherConfig, 'outcomeBatchSize' | 'outcomeBatchDelayMs' | 'readBatchSize' | 'readBatchDelayMs' | 'strictRecheckMs'>>;
  /**
   * The group-commit writer of outcomes. Default: one of this handler's own, from the config's
   * `outcomeBatchSize` / `outcomeBatchDelayMs` (defaults 64 / 5 ms). The dispatcher passes its
   * own so that `stop()` can wait for the last group.
   */
  readonly outcomes?: OutcomeWriter;
  /** Loads notifications (and their opt-outs) by id. Default: a micro-batching loader (`readBatchSize`, `readBatchDelayMs`). */
  readonly notifications?: BatchLoader<string, DeliveryRow | undefined>;
}

/**
 * The loader the delivery handler reads notifications with: concurrent reads share one
 * `WHERE id = ANY($1)` query, which also reads each one's opt-out (`notificationGetMany`).
 */
export function createNotificationLoader(
  db: Kysely<Database>,
  options: { readonly maxBatch: number; readonly delayMs: number },
): BatchLoader<string, DeliveryRow | undefined> {
  const exec = fromKysely(db);
  return createBatchLoader({ loadMany: (ids) => notificationGetMany(exec, { ids }), maxBatch: options.maxBatch, delayMs: options.delayMs });
}

/**
 * A prefetched read is used only while younger than this. It is read while provider calls of the
 * key before it run, so this bounds how much older than the call it can be (a cancel or opt-out
 * recorded in between is seen by the next attempt's read at the latest; the outcome's guard still
 * refuses to record over a state change).
 */
const PREFETCH_MAX_AGE_MS = 1_000;
/** Prefetched reads held at most (each is consumed or replaced by its key's next delivery). */
const PREFETCH_MAX_ENTRIES = 10_000;
/**
 * How far ahead of now a notification's `next_attempt_at` may be when a message starts its
 * attempt. A message that carries the attempt is due at exactly that instant (both are written
 * from one value), so only rounding (microseconds stored, milliseconds sent) has to fit.
 */
const NOT_DUE_SLACK_MS = 1_000;

/** What a prefetch read ahead: the notification and, when it looked deliverable, its prepared content. */
interface Prefetched {
  readonly message: InboundMessage;
  readonly attempt: number;
  readonly at: number;
  readonly value: Promise<{ readonly notification: DeliveryRow | undefined; readonly prepared?: Prepared } | undefined>;
}

/** The delivery handler, and the read-ahead the consumer asks for. */
export interface DeliveryHandler extends MessageHandler {
  /**
   * Reads ahead for `message`, which the consumer will hand to this handler soon for its key (it
   * asks for up to 16 of a key's next messages at once): its notification and (when it looks
   * deliverable) its content and opt-out check, so that they are ready when the key's previous
   * provider call returns instead of costing two more round trips on the key's chain; reads asked
   * for together share one query per loader. Only a hint: the handler uses the result only for this very message, only
   * if no other delivery of the same notification ran in this process since the read was sent,
   * and only while it is younger than 1 s; otherwise it reads again as without a prefetch.
   */
  readonly prefetch: (message: InboundMessage) => void;
}

/**
 * The delivery handler: everything that happens to one delivery request, the same code in
 * production (behind the Kafka consumer) and in the lab test (fed from outbox rows).
 *
 * 1. Parse (bad → dead letter). 2. Load the notification: PostgreSQL is the truth (unknown →
 *    dead letter; terminal or attempt already done → skipped, so redelivery is harmless). With
 *    `ordering: "strict"`, an earlier queued notification to the same recipient defers it.
 * 3. Check the expiry. 4. Prepare the content (template, preferences): suppressed or broken
 *    content ends dead without a provider call. 5. Call the provider with the per-attempt
 *    timeout. 6. Classify (`planOutcome`) and record attempt row + state change + outbox rows
 *    in one transaction (shared with concurrently finishing deliveries), guarded so a duplicate
 *    writes nothing.
 *
 * The database work is batched across concurrently running deliveries without changing what
 * one delivery sees: the notification comes from a loader whose query is sent after the request
 * (so it is as fresh as a single read), and the outcome goes through the group-commit writer,
 * which resolves only after the transaction holding it committed, and says whether this
 * outcome's own guard matched.
 */
export function createDeliveryHandler(deps: DeliveryHandlerDeps): DeliveryHandler {
  const { clock, events, config } = deps;
  const db = fromKysely(deps.db);
  const random = deps.random ?? Math.random;
  const notifications =
    deps.notifications ??
    createNotificationLoader(deps.db, {
      maxBatch: config.readBatchSize ?? BATCHING_DEFAULTS.readBatchSize,
      delayMs: config.readBatchDelayMs ?? BATCHING_DEFAULTS.readBatchDelayMs,
    });
  const outcomes =
    deps.outcomes ??
    createOutcomeWriter(db, {
      maxBatch: config.outcomeBatchSize ?? BATCHING_DEFAULTS.outcomeBatchSize,
      maxDelayMs: config.outcomeBatchDelayMs ?? BATCHING_DEFAULTS.outcomeBatchDelayMs,
      onFlush: (flush) => events.emit('outcomesFlushed', flush),
    });

  /**
   * Strict ordering: while an earlier notification to the same recipient is queued, this one is
   * not attempted. Its next attempt moves to just after the predecessor's, and a new message for
   * the same attempt goes to the delay topic that fits, in one transaction (no attempt spent).
   */
  const deferBehindPredecessor = async (notification: DeliveryNotification, attempt: number): Promise<HandleResult | undefined> => {
    const predecessor = await notificationFindQueuedPredecessor(db, {
      tenantId: notification.tenant_id,
      channel: notification.channel,
      recipient: notification.recipient,
      id: notification.id,
      createdAt: new Date(notification.created_at),
    });
    if (!predecessor) return undefined;
    const recheckMs = config.strictRecheckMs ?? 500;
    return deferAttempt(notification, attempt, new Date(new Date(predecessor.next_attempt_at).getTime() + recheckMs), {
      predecessorId: predecessor.id,
    });
  };

  /**
   * Puts an attempt off to `until` without spending it: the notification's next attempt moves
   * and a new message for the same attempt goes to the delay topic that fits, in one transaction.
   * At most the top tier's delay: that tier only carries exactly its delay, so its partitions
   * stay in due order (something due days ahead is looked at again every max delay).
   */
  const deferAttempt = async (
    notification: DeliveryNotification,
    attempt: number,
    until: Date,
    why: { readonly predecessorId?: string; readonly reason?: 'circuit_open' | 'rate_limited' },
  ): Promise<HandleResult> => {
    const now = clock.now();
    const top = config.tiers[config.tiers.length - 1]!;
    const waitMs = Math.min(Math.max(until.getTime() - now.getTime(), 0), top.delayMs);
    const dueAt = new Date(now.getTime() + waitMs);
    const topic = tierFor(config.tiers, waitMs).topic;
    const changed = await deps.db.transaction().execute(async (trx) => {
      const tx = fromKysely(trx);
      if (!(await notificationDefer(tx, { id: notification.id, attempt, nextAttemptAt: dueAt, now }))) return false;
      await outboxInsert(tx, { messages: [buildDeliveryRequest(notification, attempt, dueAt, topic)] });
      return true;
    });
    if (!changed) {
      events.emit('skipped', { notificationId: notification.id, attempt, reason: 'raced' });
      return { kind: 'skipped', notificationId: notification.id, reason: 'raced' };
    }
    events.emit('deferred', { notificationId: notification.id, attempt, ...why, dueAt });
    return { kind: 'deferred', notificationId: notification.id, dueAt };
  };

  /**
   * Outcomes being written, by notification id. The consumer starts a key's next message once the
   * previous provider call returned (`HandlerHooks.providerReturned`), before its outcome is
   * written; a message for the *same* notification (a duplicate, a redelivery) waits for that write
   * and then reads the notification, so it sees the attempt as done instead of calling again.
   */
  const writing = new Map<string, Promise<unknown>>();
  /** Deliveries running in this handler, by notification id (entered and not yet returned). */
  const active = new Map<string, number>();
  /** Reads ahead (`prefetch`), by notification id. Any delivery of the id that starts takes (removes) its entry. */
  const prefetched = new Map<string, Prefetched>();

  /** Whether `notification` looks like it will be attempted as `attempt` (the handler checks again on its turn). */
  const looksDeliverable = (notification: DeliveryNotification, request: { tenant_id: string; channel: string }, attempt: number) =>
    notification.tenant_id === request.tenant_id &&
    notification.channel === request.channel &&
    !isTerminal(notification.state) &&
    notification.attempts === attempt - 1 &&
    attempt <= notification.max_attempts &&
    notification.ordering !== 'strict' &&
    clock.now().getTime() < new Date(notification.expires_at).getTime();

  const prefetch = (message: InboundMessage) => {
    const parsed = parseInboundRequest(message.value);
    if (!parsed.ok) return;
    const request = parsed.message;
    // Another delivery of this notification is running (or already read ahead): its outcome may
    // change what a read now would see, so this one reads on its own turn.
    if (active.has(request.id) || writing.has(request.id) || prefetched.has(request.id)) return;
    const attempt = request.attempt;
    const value = notifications
      .load(request.id)
      .then(async (notification) => {
        if (!notification || !looksDeliverable(notification, request, attempt)) return { notification };
        try {
          return { notification, prepared: await deps.content.prepare(notification, attempt, deliveryOptOut(notification)) };
        } catch {
          return { notification }; // prepared again on the delivery's turn, which reports the failure
        }
      })
      .catch(() => undefined); // read again on the delivery's turn, which reports the failure
    if (prefetched.size >= PREFETCH_MAX_ENTRIES) prefetched.delete(prefetched.keys().next().value!);
    prefetched.set(request.id, { message, attempt, at: clock.now().getTime(), value });
  };

  /** The prefetched read for exactly this message, if still usable; removes the id's entry either way. */
  const takePrefetched = async (message: InboundMessage, id: string, attempt: number) => {
    const entry = prefetched.get(id);
    if (!entry) return undefined;
    prefetched.delete(id);
    if (entry.message !== message || entry.attempt !== attempt || clock.now().getTime() - entry.at > PREFETCH_MAX_AGE_MS) return undefined;
    const got = await entry.value;
    return got?.notification ? { notification: got.notification, prepared: got.prepared } : undefined;
  };

  const handle = async (message: InboundMessage, signal: AbortSignal, hooks?: HandlerHooks): Promise<HandleResult> => {
    const parsed = parseInboundRequest(message.value);
    if (!parsed.ok) return { kind: 'dead-letter', code: parseFailureCode(parsed.reason), reason: parsed.reason };
    const request = parsed.message;
    const dueAt = new Date(request.due_at);
    const aheadMs = dueAt.getTime() - clock.now().getTime();
    if (aheadMs > 0) {
      // The consumer holds a partition at a message that is not due, unless it is out of range.
      if (dueOutOfRange(config.tiers, message.topic, aheadMs)) {
        return {
          kind: 'dead-letter',
          code: 'due_out_of_range',
          reason: `due_at ${request.due_at} is further ahead than any delivery request on ${message.topic} is written`,
        };
      }
      return { kind: 'not-due', dueAt };
    }
    active.set(request.id, (active.get(request.id) ?? 0) + 1);
    try {
      return await deliver(message, request, dueAt, signal, hooks);
    } finally {
      const n = active.get(request.id)! - 1;
      if (n > 0) active.set(request.id, n);
      else active.delete(request.id);
    }
  };

  const deliver = async (
    message: InboundMessage,
    request: { readonly id: string; readonly tenant_id: string; readonly channel: string; readonly attempt: number },
    dueAt: Date,
    signal: AbortSignal,
    hooks: HandlerHooks | undefined,
  ): Promise<HandleResult> => {
    // No other delivery of this notification ran here since a prefetch was sent (one that starts
    // takes the entry), so a prefetched read is as good as a read now, minus its age.
    const ahead = await takePrefetched(message, request.id, request.attempt);
    let found: DeliveryRow | undefined = ahead?.notification;
    if (!found) {
      const earlier = writing.get(request.id);
      if (earlier) await earlier;
      found = await notifications.load(request.id);
    }
    if (!found) return { kind: 'dead-letter', code: 'unknown_notification', reason: `unknown notification ${request.id}` };
    const notification = found;
    if (notification.tenant_id !== request.tenant_id || notification.channel !== request.channel) {
      return {
        kind: 'dead-letter',
        code: 'mismatch',
        reason: `message does not match notification ${request.id} (tenant or channel differs)`,
      };
    }
    const attempt = request.attempt;
    const skipped = (reason: SkipReason): HandleResult => {
      events.emit('skipped', { notificationId: notification.id, attempt, reason });
      return { kind: 'skipped', notificationId: notification.id, reason };
    };
    if (isTerminal(notification.state)) return skipped('terminal');
    if (notification.attempts >= attempt) return skipped('attempt-done');
    if (notification.attempts < attempt - 1) {
      return {
        kind: 'dead-letter',
        code: 'attempt_ahead',
        reason: `attempt ${attempt} is ahead of notification ${notification.id} (${notification.attempts} attempts made)`,
      };
    }
    if (attempt > notification.max_attempts) {
      return {
        kind: 'dead-letter',
        code: 'attempt_over_max',
        reason: `attempt ${attempt} exceeds max_attempts ${notification.max_attempts} of notification ${notification.id}`,
      };
    }

    // The row says when the attempt is due; this message says it is due now. Every writer puts
    // one instant in both, so the message is not the one carrying the attempt: a stray one, or
    // one superseded since (a scheduled send still held, or released onto a delay topic; an
    // earlier deferral). The message that does carry it follows, or the repair sweep writes one.
    if (notification.next_attempt_ms !== null && notification.next_attempt_ms > clock.now().getTime() + NOT_DUE_SLACK_MS) {
      return skipped('early');
    }

    // (An expired one is not held back: it ends dead below, which releases its successors.)
    if (notification.ordering === 'strict' && clock.now().getTime() < new Date(notification.expires_at).getTime()) {
      const deferred = await deferBehindPredecessor(notification, attempt);
      if (deferred) return deferred;
    }

    // The delivery's log fields, merged into each line rather than bound in a child logger: pino
    // serialises a child's bindings when it is made, and a delivery writes at most one line (none
    // at the default level when it is sent), so they are built only for a line.
    const ids = () => ({
      notificationId: notification.id,
      tenantId: notification.tenant_id,
      channel: notification.channel,
      attempt,
      traceId: deliveryTraceId(message.headers),
    });
    const startedAt = clock.now();
    events.emit('dispatched', {
      topic: message.topic,
      notificationId: notification.id,
      attempt,
      latenessMs: startedAt.getTime() - dueAt.getTime(),
    });

    let result: AttemptResult;
    let answeredBy: ProviderRole | undefined;
    let durationMs = 0;
    if (startedAt.getTime() >= new Date(notification.expires_at).getTime()) {
      result = { kind: 'expired' };
    } else {
      let prepared: Prepared | { kind: 'failed'; error: string };
      try {
        prepared = ahead?.prepared ?? (await deps.content.prepare(notification, attempt, deliveryOptOut(notification)));
      } catch (err) {
        prepared = { kind: 'failed', error: `content preparation failed: ${errorMessage(err)}` };
      }
      if (prepared.kind === 'failed') result = { kind: 'transient', error: prepared.error };
      else if (prepared.kind === 'suppressed') result = { kind: 'suppressed', reason: prepared.reason };
      else if (prepared.kind === 'permanent') result = { kind: 'permanent', error: prepared.error };
      else {
        const provider = deps.providers[notification.channel];
        if (!provider) {
          // The registry leaves a channel out when it is not configured (e.g. no NOTIFY_SMTP_URL): retrying cannot help.
          result = { kind: 'permanent', error: `no provider is configured for channel ${notification.channel}` };
        } else {
          // The primary, then the channel's fallback after a transient failure or while the
          // primary's endpoint is not admitting (docs/endpoints.md).
          const candidates: { provider: Provider; role: ProviderRole }[] = [{ provider, role: 'primary' }];
          const fallback = deps.fallbacks?.[notification.channel];
          if (fallback) candidates.push({ provider: fallback, role: 'fallback' });
          let answer: SendResult | undefined;
          let later: { until: Date; reason: 'circuit_open' | 'rate_limited' } | undefined;
          let disabled: string | undefined;
          const t0 = performance.now();
          for (const candidate of candidates) {
            const target = endpointTargetOf(candidate.provider, prepared.delivery, candidate.role);
            if (deps.endpoints && target) {
              const admission = await deps.endpoints.admit(target, signal);
              if (signal.aborted) return { kind: 'abandoned', notificationId: notification.id };
              if (admission.kind === 'disabled') {
                disabled ??= `endpoint_disabled: ${target.origin} is disabled (GET /v1/endpoints)`;
                continue;
              }
              if (admission.kind === 'later') {
                if (!later || admission.until < later.until) later = { until: admission.until, reason: admission.reason };
                continue;
              }
            }
            const call = await callProvider(candidate.provider, prepared.delivery, { timeoutMs: config.sendTimeoutMs, shutdown: signal });
            if (call.kind === 'abandoned') {
              deps.logger.info(
                { ...ids(), durationMs: performance.now() - t0 },
                'delivery abandoned by shutdown; the notification stays queued',
              );
              return { kind: 'abandoned', notificationId: notification.id };
            }
            if (deps.endpoints && target) deps.endpoints.observe(target, call.result);
            answer = call.result;
            answeredBy = candidate.role;
            if (answer.kind !== 'transient') break;
          }
          durationMs = performance.now() - t0;
          if (answer) result = answer;
          else if (later) {
            // Nothing was sent and no attempt is spent: the circuit is open or the limit spent.
            deps.logger.info({ ...ids(), reason: later.reason, until: later.until.toISOString() }, 'attempt deferred by endpoint health');
            return deferAttempt(notification, attempt, later.until, { reason: later.reason });
          } else result = { kind: 'endpoint_disabled', error: disabled ?? 'endpoint_disabled' };
        }
      }
    }

    const finishedAt = clock.now();
    const plan = planOutcome({
      notification,
      attempt,
      result,
      provider: answeredBy,
      now: finishedAt,
      retry: config.retry,
      tiers: config.tiers,
      random,
    });
    // Whether the key's next delivery started when this provider call returned: then the next
    // outcome of the key is one provider call away, and the writer may wait longer for it.
    let keyBusy = false;
    const recording = outcomes.record({ notification, plan, startedAt, finishedAt }, () => keyBusy);
    const settled = recording.then(
      () => {},
      () => {},
    );
    writing.set(notification.id, settled);
    keyBusy = hooks?.providerReturned?.() === true;
    let recorded: boolean;
    try {
      recorded = await recording;
    } finally {
      if (writing.get(notification.id) === settled) writing.delete(notification.id);
    }
    if (!recorded) {
      deps.logger.info({ ...ids(), outcome: plan.attemptOutcome }, 'attempt already recorded by another delivery; outcome discarded');
      return skipped('raced');
    }

    events.emit('attempt', {
      notificationId: notification.id,
      channel: notification.channel,
      attempt,
      outcome: plan.attemptOutcome,
      durationMs,
      providerStatus: plan.providerStatus,
    });
    events.emit('stateChanged', {
      notificationId: notification.id,
      channel: notification.channel,
      from: notification.state,
      to: plan.to,
      deadReason: plan.deadReason,
      attempts: attempt,
    });
    if (plan.to === 'queued' && plan.retryTopic && plan.delayMs !== null) {
      events.emit('retryScheduled', {
        notificationId: notification.id,
        attempt: attempt + 1,
        delayMs: plan.delayMs,
        topic: plan.retryTopic,
      });
    }
    // A sent attempt logs at debug (the attempt row, the `sent` event and the metrics record it; a
    // line per delivery was 4.9 % of the service's CPU in a backlog drain), a retry at info, a dead end at warn.
    const level = plan.to === 'dead' ? 'warn' : plan.to === 'sent' ? 'debug' : 'info';
    if (deps.logger.isLevelEnabled?.(level) ?? true) {
      const fields = {
        ...ids(),
        outcome: plan.attemptOutcome,
        state: plan.to,
        deadReason: plan.deadReason ?? undefined,
        providerStatus: plan.providerStatus ?? undefined,
        nextAttemptAt: plan.nextAttemptAt?.toISOString(),
        durationMs: Math.round(durationMs),
      };
      if (level === 'warn') deps.logger.warn(fields, 'notification dead');
      else if (level === 'debug') deps.logger.debug(fields, 'notification sent');
      else deps.logger.info(fields, 'attempt failed; retry scheduled');
    }
    return { kind: 'recorded', notificationId: notification.id, plan };
  };

  return Object.assign(handle, { prefetch });
}
