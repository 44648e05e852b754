import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlExecutor } from '@notify/outbox';
import { ManualClock } from '@notify/runtime/testing';
import { createMetrics } from '@notify/cli';
import { notificationQueueAge } from '../src/sql/notification-queue-age.js';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';

// notify_oldest_queued_age_seconds and notify_queued_overdue_seconds (RELIABILITY.md, finding 2):
// the values per channel, and a read that does not grow with the backlog. The backlog here is
// 20,000 queued webhooks, and one queued email due after all of them: the case where a per-channel
// read through the (next_attempt_at) index alone walks every webhook.

const NOW = new Date('2026-05-01T12:00:00Z');
let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase();
  const now = NOW.toISOString();
  await sql`
    INSERT INTO notifications (id, tenant_id, channel, recipient, body, state, max_attempts, next_attempt_at, expires_at, created_at, updated_at)
    SELECT 'ntf_w' || g, 'acme', 'webhook', 'https://hooks.example.com/' || g, 'b', 'queued', 5,
           ${now}::timestamptz - interval '30 minutes' + g * interval '1 ms', ${now}::timestamptz + interval '1 day',
           ${now}::timestamptz - interval '1 hour' + g * interval '1 ms', ${now}::timestamptz
      FROM generate_series(0, 19999) g`.execute(t.db);
  await sql`
    INSERT INTO notifications (id, tenant_id, channel, recipient, body, state, max_attempts, next_attempt_at, expires_at, created_at, updated_at)
    VALUES ('ntf_e', 'acme', 'email', 'a@example.com', 'b', 'queued', 5, ${now}::timestamptz + interval '1 hour',
            ${now}::timestamptz + interval '1 day', ${now}::timestamptz - interval '10 minutes', ${now}::timestamptz)`.execute(t.db);
  // Sent SMS are not queued: the sms series stays 0.
  await sql`
    INSERT INTO notifications (id, tenant_id, channel, recipient, body, state, attempts, max_attempts, expires_at, created_at, updated_at, sent_at)
    SELECT 'ntf_s' || g, 'acme', 'sms', '+1555000' || g, 'b', 'sent', 1, 5, ${now}::timestamptz + interval '1 day',
           ${now}::timestamptz - interval '2 hours', ${now}::timestamptz, ${now}::timestamptz
      FROM generate_series(0, 4999) g`.execute(t.db);
  await sql`VACUUM ANALYZE notifications`.execute(t.db);
}, 60_000);

afterAll(async () => {
  await t?.close();
});

describe('queue-age gauges', () => {
  it('give each channel its oldest queued age and its most overdue attempt, 0 for a channel with nothing queued', async () => {
    const text = await createMetrics({ db: t.db, clock: new ManualClock(NOW), processMetrics: false }).render();
    expect(text).toContain('notify_oldest_queued_age_seconds{channel="webhook"} 3600');
    expect(text).toContain('notify_queued_overdue_seconds{channel="webhook"} 1800');
    expect(text).toContain('notify_oldest_queued_age_seconds{channel="email"} 600');
    expect(text).toContain('notify_queued_overdue_seconds{channel="email"} 0'); // due in an hour
    expect(text).toContain('notify_oldest_queued_age_seconds{channel="sms"} 0');
    expect(text).toContain('notify_queued_overdue_seconds{channel="sms"} 0');
  });

  it('read a few index pages, not the backlog', async () => {
    // The same statement, explained: the executor runs EXPLAIN of whatever the query sends.
    const plans: unknown[] = [];
    const explain: SqlExecutor = {
      async query(text, values) {
        const r = await t.pool.query<{ 'QUERY PLAN': unknown[] }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, [...values]);
        plans.push(r.rows[0]!['QUERY PLAN'][0]);
        return { rows: [] };
      },
    };
    await notificationQueueAge(explain);
    const plan = plans[0] as { Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } };
    const pages = plan.Plan['Shared Hit Blocks'] + plan.Plan['Shared Read Blocks'];
    // The former GROUP BY read every queued row's index entry: 2,752 pages at 120,000 queued rows.
    expect(pages).toBeLessThan(60);
    expect(JSON.stringify(plan)).not.toContain('Seq Scan');
  });
});
