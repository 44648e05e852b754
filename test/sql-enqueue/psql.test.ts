/**
 * notify_enqueue through the real psql binary, as a service in another language would call it:
 * inside the caller's own transaction, with refusals as documented SQLSTATEs (docs/sql-enqueue.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { psql, psqlError } from './psql.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

const intent = (over: Record<string, unknown> = {}) =>
  JSON.stringify({ tenant_id: 'acme', channel: 'email', to: 'ada@example.com', subject: 'Hi', body: 'Welcome', ...over });

async function rowsFor(id: string) {
  const n = await t.pool.query('SELECT * FROM notifications WHERE id = $1', [id]);
  // its Kafka messages: the request row and the queued event it carries (migration 0150)
  const o = await t.pool.query("SELECT topic FROM outbox_messages WHERE headers->>'notification-id' = $1 ORDER BY id, part", [id]);
  return { notifications: n.rows.length, outbox: o.rows.map((r: { topic: string }) => r.topic) };
}

const ID = /^ntf_[0-9A-HJKMNP-TV-Z]{26}$/;

describe('notify_enqueue from psql', () => {
  it('writes nothing when the caller rolls back', async () => {
    const r = await psql(t.url, "BEGIN;\nSELECT notify_enqueue(:'intent');\nROLLBACK;\n", { intent: intent() });
    expect(r.exitCode, r.stderr).toBe(0);
    const id = r.stdout.trim();
    expect(id).toMatch(ID);
    expect(await rowsFor(id)).toEqual({ notifications: 0, outbox: [] });
  });

  it('writes the notification and one outbox row with its two messages, in order, when the caller commits', async () => {
    const r = await psql(t.url, "BEGIN;\nSELECT notify_enqueue(:'intent');\nCOMMIT;\n", { intent: intent() });
    expect(r.exitCode, r.stderr).toBe(0);
    const id = r.stdout.trim();
    expect(await rowsFor(id)).toEqual({ notifications: 1, outbox: ['requests', 'events'] });
    const rows = await t.pool.query("SELECT topic, event_value IS NOT NULL AS carries FROM outbox WHERE headers->>'notification-id' = $1", [
      id,
    ]);
    expect(rows.rows).toEqual([{ topic: 'requests', carries: true }]);
    const { rows: n } = await t.pool.query(
      'SELECT state, attempts, max_attempts, recipient, expires_at - created_at AS ttl FROM notifications WHERE id = $1',
      [id],
    );
    expect(n[0]).toMatchObject({ state: 'queued', attempts: 0, max_attempts: 8, recipient: 'ada@example.com', ttl: { days: 1 } });
  });

  it('returns the original id for the same key and the same request', async () => {
    const script = "SELECT notify_enqueue(:'intent');\nSELECT notify_enqueue(:'intent');\n";
    const r = await psql(t.url, script, { intent: intent({ idempotency_key: 'psql-same' }) });
    expect(r.exitCode, r.stderr).toBe(0);
    const [first, second] = r.stdout.trim().split('\n');
    expect(first).toMatch(ID);
    expect(second).toBe(first);
    expect(await rowsFor(first!)).toEqual({ notifications: 1, outbox: ['requests', 'events'] });
    // a traceparent is not part of the request
    const again = await psql(t.url, "SELECT notify_enqueue(:'intent');\n", {
      intent: intent({ idempotency_key: 'psql-same', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }),
    });
    expect(again.stdout.trim()).toBe(first);
  });

  it('refuses the same key with a different request: NT009 idempotency_conflict, with the existing id', async () => {
    const first = await psql(t.url, "SELECT notify_enqueue(:'intent');\n", { intent: intent({ idempotency_key: 'psql-conflict' }) });
    const id = first.stdout.trim();
    const r = await psql(t.url, "\\set VERBOSITY verbose\nBEGIN;\nSELECT notify_enqueue(:'intent');\nCOMMIT;\n", {
      intent: intent({ idempotency_key: 'psql-conflict', body: 'Different' }),
    });
    expect(r.exitCode).toBe(3);
    const error = psqlError(r.stderr);
    expect(error).toEqual({
      sqlstate: 'NT009',
      message: `idempotency_conflict: this Idempotency-Key was already used for a different request (notification ${id}); use a new key for a new request`,
      detail: { code: 'idempotency_conflict', errors: [], existing_id: id },
    });
    expect(r.stderr).toContain('HINT:  use a new idempotency_key for a new request');
  });

  it.each([
    ['NT001', 'validation_failed', { to: 7 }, [{ path: 'to', message: 'Invalid input: expected string, received number' }]],
    [
      'NT001',
      'validation_failed',
      { channel: 'sms', to: '12' },
      [
        { path: 'to', message: 'must be a phone number in E.164 form, e.g. +14155550100' },
        { path: 'subject', message: 'only the email channel has a subject' },
      ],
    ],
    ['NT002', 'unknown_channel', { channel: 'pager' }, [{ path: 'channel', message: 'must be one of email, sms, webhook' }]],
    ['NT003', 'payload_too_large', { body: 'x'.repeat(70_000) }, [{ path: 'body', message: 'content over 65536 bytes' }]],
    ['NT004', 'bad_expiry', { expires_at: '2020-01-01T00:00:00Z' }, [{ path: 'expires_at', message: 'must be in the future' }]],
    [
      'NT004',
      'bad_expiry',
      { expires_at: '2999-01-01T00:00:00Z', ttl_seconds: 60 },
      [{ path: 'expires_at', message: 'conflicts with ttl_seconds' }],
    ],
  ] as const)(
    'refuses an invalid intent with %s %s, the code in the message and every issue in DETAIL',
    async (sqlstate, code, over, errors) => {
      const r = await psql(t.url, "\\set VERBOSITY verbose\nSELECT notify_enqueue(:'intent');\n", { intent: intent(over) });
      expect(r.exitCode).toBe(3);
      const error = psqlError(r.stderr);
      expect(error?.sqlstate).toBe(sqlstate);
      expect(error?.message.startsWith(`${code}: `)).toBe(true);
      expect(error?.detail).toEqual({ code, errors });
    },
  );

  it('\\errverbose shows the SQLSTATE after the fact, and the failed transaction rolls back as a whole', async () => {
    const script = [
      '\\set ON_ERROR_STOP 0',
      'BEGIN;',
      "SELECT notify_enqueue(:'good');",
      "SELECT notify_enqueue(:'bad');",
      '\\errverbose',
      'COMMIT;', // a failed transaction ends in ROLLBACK
      "SELECT count(*) FROM notifications WHERE recipient = 'errverbose@example.com';",
      '',
    ].join('\n');
    const r = await psql(t.url, script, { good: intent({ to: 'errverbose@example.com' }), bad: intent({ channel: 'pager' }) });
    // The terse error line has no SQLSTATE; \errverbose repeats the last error with it.
    expect(r.stderr).toMatch(/ERROR:\s+NT002: unknown_channel: unknown channel "pager"; expected one of email, sms, webhook/);
    expect(r.stdout.trim().split('\n').at(-1)).toBe('0');
  });

  it('a REPEATABLE READ caller that cannot see the key’s holder is told to retry the transaction', async () => {
    const other = await t.pool.connect();
    try {
      // psql's snapshot is taken before the other transaction commits the key.
      const script = [
        'BEGIN ISOLATION LEVEL REPEATABLE READ;',
        'SELECT 1;',
        'SELECT pg_advisory_lock(4242);', // released by the test once the key is committed
        '\\set VERBOSITY verbose',
        "SELECT notify_enqueue(:'intent');",
        '',
      ].join('\n');
      await other.query('SELECT pg_advisory_lock(4242)');
      const run = psql(t.url, script, { intent: intent({ idempotency_key: 'psql-rr' }) });
      // wait until psql holds its snapshot and waits for the lock
      for (let i = 0; i < 400; i++) {
        const { rows } = await t.pool.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'notify-sql-enqueue-test' AND wait_event = 'advisory'",
        );
        if (rows[0].n > 0) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      await other.query('SELECT notify_enqueue($1::jsonb)', [intent({ idempotency_key: 'psql-rr' })]);
      await other.query('SELECT pg_advisory_unlock(4242)');
      const r = await run;
      expect(r.exitCode).toBe(3);
      expect(psqlError(r.stderr)?.sqlstate).toBe('40001');
    } finally {
      other.release();
    }
  });
});

describe('notify_settings', () => {
  it('gives every enqueuer the service’s attempt budget and default expiry, and keeps its one row', async () => {
    const r = await psql(
      t.url,
      [
        'BEGIN;',
        'UPDATE notify_settings SET max_attempts = 3, default_ttl_ms = 3600000;',
        "SELECT notify_enqueue(:'intent') AS id \\gset",
        "SELECT max_attempts || ' ' || extract(epoch FROM expires_at - created_at) FROM notifications WHERE id = :'id';",
        'ROLLBACK;',
        '',
      ].join('\n'),
      { intent: intent() },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('3 3600.000000');
    const del = await psql(t.url, '\\set VERBOSITY verbose\nDELETE FROM notify_settings;\n');
    expect(del.exitCode).toBe(3);
    expect(psqlError(del.stderr)?.sqlstate).toBe('23001');
    const second = await psql(t.url, '\\set VERBOSITY verbose\nINSERT INTO notify_settings (id) VALUES (false);\n');
    expect(psqlError(second.stderr)?.message).toContain('notify_settings_one_row');
  });
});
