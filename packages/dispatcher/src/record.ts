import { buildDeliveryRequest, buildStatusEvent, type MessageSubject, type OutboxMessage, type StatusEventType } from '@notify/contract';
import { type Notification, type SqlExecutor } from '@notify/outbox';
import type { OutcomePlan } from './outcome.js';
import { notificationRecordOutcome, type NotificationRecordOutcomeParams } from './sql/notification-record-outcome.js';
import { notificationRecordOutcomes } from './sql/notification-record-outcomes.js';

/** The inputs of `recordOutcome`. */
export interface RecordOutcomeParams {
  readonly notification: Pick<Notification, 'id' | 'tenant_id' | 'channel' | 'recipient' | 'traceparent'>;
  readonly plan: OutcomePlan;
  readonly startedAt: Date;
  readonly finishedAt: Date;
}

const EVENT_TYPE: Record<OutcomePlan['to'], StatusEventType> = {
  sent: 'notification.sent',
  queued: 'notification.retry_scheduled',
  dead: 'notification.dead',
};

/** The outbox rows that follow from a plan: a status event for the transition, and the retry request when it stays queued. */
export function outcomeMessages(notification: RecordOutcomeParams['notification'], plan: OutcomePlan, at: Date): OutboxMessage[] {
  const subject: MessageSubject = {
    id: notification.id,
    tenant_id: notification.tenant_id,
    channel: notification.channel,
    recipient: notification.recipient,
    traceparent: notification.traceparent,
  };
  const messages = [
    buildStatusEvent(subject, {
      type: EVENT_TYPE[plan.to],
      state: plan.to,
      attempts: plan.attempt,
      // Contract v1's dead_reason enum has no endpoint_disabled (a new value would be a new
      // contract version): v1 consumers see permanent, and last_error names the reason.
      dead_reason: plan.deadReason === 'endpoint_disabled' ? 'permanent' : plan.deadReason,
      last_error: plan.lastError,
      next_attempt_at: plan.nextAttemptAt,
      occurred_at: at,
    }),
  ];
  if (plan.to === 'queued' && plan.nextAttemptAt && plan.retryTopic) {
    messages.push(buildDeliveryRequest(subject, plan.attempt + 1, plan.nextAttemptAt, plan.retryTopic));
  }
  return messages;
}

/** The row-level parameters of one outcome: what `notificationRecordOutcome(s)` writes for it. */
export function outcomeRecordParams(params: RecordOutcomeParams): NotificationRecordOutcomeParams {
  const { notification, plan, startedAt, finishedAt } = params;
  return {
    id: notification.id,
    attempt: plan.attempt,
    state: plan.to,
    deadReason: plan.deadReason,
    lastError: plan.lastError,
    nextAttemptAt: plan.nextAttemptAt,
    startedAt,
    finishedAt,
    outcome: plan.attemptOutcome,
    error: plan.attemptError,
    providerStatus: plan.providerStatus,
    provider: plan.provider,
    messages: outcomeMessages(notification, plan, finishedAt),
  };
}

/**
 * Writes one attempt's outcome in one transaction: the attempt row, the guarded state change
 * and the outbox rows. Returns false (and writes nothing) when the notification was no longer
 * queued at `attempts = attempt − 1`.
 */
export function recordOutcome(db: SqlExecutor, params: RecordOutcomeParams): Promise<boolean> {
  return notificationRecordOutcome(db, outcomeRecordParams(params));
}

/**
 * Writes several attempts' outcomes in one transaction (group commit), each as `recordOutcome`
 * would: returns, per outcome in order, whether it was recorded; an outcome whose guard does not
 * match writes nothing and leaves the others unaffected. At most one outcome per notification.
 * Throws, writing nothing at all, when the statement fails.
 */
export function recordOutcomes(db: SqlExecutor, params: readonly RecordOutcomeParams[]): Promise<boolean[]> {
  return notificationRecordOutcomes(db, { outcomes: params.map(outcomeRecordParams) });
}
