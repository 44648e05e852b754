import { InvalidTransitionError } from '@notify/outbox';
import { describe, expect, it } from 'vitest';
import { planOutcome, type PlanOutcomeParams } from './outcome.js';
import { delayTiers } from './retry/delay-topics.js';

const retry = { baseDelayMs: 1000, maxDelayMs: 30_000, jitter: 0 };
const now = new Date('2026-05-01T12:00:00Z');
const params = (over: Partial<PlanOutcomeParams>): PlanOutcomeParams => ({
  notification: { state: 'queued', max_attempts: 4, expires_at: new Date('2026-05-02T12:00:00Z') },
  attempt: 1,
  result: { kind: 'sent' },
  now,
  retry,
  tiers: delayTiers(retry),
  random: Math.random,
  ...over,
});

describe('planOutcome', () => {
  it('sent → sent, error cleared', () => {
    expect(planOutcome(params({ attempt: 3, result: { kind: 'sent', providerStatus: '250' } }))).toMatchObject({
      to: 'sent',
      attemptOutcome: 'sent',
      lastError: null,
      providerStatus: '250',
      nextAttemptAt: null,
    });
  });

  it('permanent → dead at once, whatever attempts are left', () => {
    expect(planOutcome(params({ result: { kind: 'permanent', error: 'mailbox does not exist', providerStatus: '550' } }))).toMatchObject({
      to: 'dead',
      deadReason: 'permanent',
      lastError: 'mailbox does not exist',
      attemptOutcome: 'permanent',
    });
  });

  it('transient → queued on the tier of the backoff delay', () => {
    const plan = planOutcome(params({ attempt: 2, result: { kind: 'transient', error: 'provider returned 503', providerStatus: '503' } }));
    expect(plan).toMatchObject({
      to: 'queued',
      deadReason: null,
      lastError: 'provider returned 503',
      delayMs: 2000,
      retryTopic: 'retry.2s',
    });
    expect(plan.nextAttemptAt?.toISOString()).toBe('2026-05-01T12:00:02.000Z');
  });

  it('transient on the last allowed attempt → dead, exhausted, with the last error', () => {
    expect(planOutcome(params({ attempt: 4, result: { kind: 'transient', error: 'provider returned 503' } }))).toMatchObject({
      to: 'dead',
      deadReason: 'exhausted',
      lastError: 'provider returned 503',
      attemptOutcome: 'transient',
    });
  });

  it('honours Retry-After up to the max delay', () => {
    const plan = planOutcome(params({ result: { kind: 'transient', error: '429', notBefore: new Date(now.getTime() + 20_000) } }));
    expect(plan.delayMs).toBe(20_000);
    expect(plan.retryTopic).toBe('retry.16s');
  });

  it('transient whose next attempt would come at or after the expiry → dead, expired', () => {
    const notification = { state: 'queued' as const, max_attempts: 8, expires_at: new Date(now.getTime() + 1000) };
    expect(planOutcome(params({ notification, result: { kind: 'transient', error: 'timeout' } }))).toMatchObject({
      to: 'dead',
      deadReason: 'expired',
      lastError: 'timeout',
    });
  });

  it('expired and suppressed end dead without a provider answer', () => {
    expect(planOutcome(params({ attempt: 2, result: { kind: 'expired' } }))).toMatchObject({
      to: 'dead',
      deadReason: 'expired',
      attemptOutcome: 'expired',
      lastError: 'expired before attempt 2 (expires_at passed)',
    });
    expect(planOutcome(params({ result: { kind: 'suppressed', reason: 'recipient opted out of email' } }))).toMatchObject({
      to: 'dead',
      deadReason: 'suppressed',
      attemptOutcome: 'suppressed',
    });
  });

  it('refuses to plan a change for a notification that is not queued', () => {
    expect(() => planOutcome(params({ notification: { state: 'sent', max_attempts: 4, expires_at: now } }))).toThrow(
      InvalidTransitionError,
    );
  });
});
