/**
 * The audit is the oracle of every fault scenario, so it is tested on its own: given a database
 * in a known state and a receiver log, it must find each kind of loss and inconsistency (and
 * nothing in a clean run). Rows are written with plain SQL, as the stack would leave them.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { enqueue, fromKysely, type SqlExecutor } from '@notify/outbox';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { type ReceivedDelivery, auditRun, formatChaosTable } from '../support/chaos/audit.js';

let t: TestDatabase;
let db: SqlExecutor;
const retry = { baseDelayMs: 200, maxDelayMs: 2000, jitter: 0 };

beforeAll(async () => {
  t = await createTestDatabase();
  db = fromKysely(t.db);
});
afterAll(async () => {
  await t?.close();
});
beforeEach(async () => {
  await t.pool.query('TRUNCATE notifications, attempts, outbox CASCADE');
});

async function make(n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const { notification } = await t.db
      .transaction()
      .execute((trx) =>
        enqueue(
          trx,
          { tenant_id: 'audit', channel: 'webhook', to: `https://h.example.com/${i}`, body: 'b' },
          { maxAttempts: 5, defaultTtlMs: 3_600_000 },
        ),
      );
    ids.push(notification.id);
  }
  await t.pool.query('UPDATE outbox SET published_at = now()');
  return ids;
}

/** As the dispatcher records it: attempt rows 1..n (transient, then the final outcome), state, timestamps. */
async function settle(id: string, outcomes: readonly ('sent' | 'transient' | 'permanent')[], { gapMs = 0 }: { gapMs?: number } = {}) {
  const { rows } = await t.pool.query<{ created_at: Date }>('SELECT created_at FROM notifications WHERE id = $1', [id]);
  let at = rows[0]!.created_at.getTime() + 5;
  for (const [i, outcome] of outcomes.entries()) {
    if (i > 0) at += 200 * 2 ** (i - 1) + gapMs;
    await t.pool.query('INSERT INTO attempts (notification_id, attempt, started_at, finished_at, outcome) VALUES ($1, $2, $3, $4, $5)', [
      id,
      i + 1,
      new Date(at),
      new Date(at + 1),
      outcome,
    ]);
    at += 1;
  }
  const last = outcomes[outcomes.length - 1];
  if (last === 'sent') {
    await t.pool.query("UPDATE notifications SET state = 'sent', sent_at = now(), next_attempt_at = NULL, attempts = $2 WHERE id = $1", [
      id,
      outcomes.length,
    ]);
  } else if (last === 'permanent') {
    await t.pool.query(
      "UPDATE notifications SET state = 'dead', dead_reason = 'permanent', next_attempt_at = NULL, attempts = $2 WHERE id = $1",
      [id, outcomes.length],
    );
  } else {
    await t.pool.query('UPDATE notifications SET attempts = $2 WHERE id = $1', [id, outcomes.length]);
  }
}

const got = (id: string, accepted = true): ReceivedDelivery => ({ webhookId: id, accepted, at: new Date() });

describe('auditRun', () => {
  it('a clean run: nothing lost, duplicates counted, lateness measured from the backoff schedule', async () => {
    const ids = await make(3);
    await settle(ids[0]!, ['sent']);
    await settle(ids[1]!, ['transient', 'transient', 'sent'], { gapMs: 40 });
    await settle(ids[2]!, ['sent']);
    const report = await auditRun({
      scenario: 'clean',
      db,
      ids,
      deliveries: [got(ids[0]!), got(ids[1]!), got(ids[1]!), got(ids[1]!, false), got(ids[2]!)],
      retry,
    });
    expect(report.problems).toEqual([]);
    // ids[1] failed twice before its 'sent': its second delivery is explained by a failed attempt.
    expect(report.row).toMatchObject({ notifications: 3, lost: 0, duplicates: 1, redelivered: 0, sent: 3, dead: 0, waiting: 0 });
    const again = await auditRun({
      scenario: 'clean',
      db,
      ids,
      deliveries: [got(ids[0]!), got(ids[0]!), got(ids[1]!), got(ids[2]!)],
      retry,
    });
    expect(again.row).toMatchObject({ duplicates: 1, redelivered: 1 });
    expect(report.row.maxLatenessMs).toBeGreaterThanOrEqual(40);
    expect(report.early).toBe(0);
    expect(formatChaosTable([report.row])).toContain('| clean');
  });

  it('finds each kind of loss: missing row, stuck queued, sent but never received', async () => {
    const ids = await make(3);
    await settle(ids[0]!, ['sent']); // the receiver never got it
    await t.pool.query("UPDATE notifications SET next_attempt_at = now() - interval '1 minute' WHERE id = $1", [ids[1]]); // stuck
    await t.pool.query("UPDATE notifications SET next_attempt_at = now() + interval '1 minute' WHERE id = $1", [ids[2]]); // legitimately waiting
    const report = await auditRun({ scenario: 'lossy', db, ids: [...ids, 'ntf_01JNEVERENQUEUEDXXXXXXXXXX'], deliveries: [], retry });
    expect(report.row).toMatchObject({ lost: 3, waiting: 1 });
    expect(report.lostIds).toEqual(expect.arrayContaining([ids[0], ids[1], 'ntf_01JNEVERENQUEUEDXXXXXXXXXX']));
  });

  it('finds inconsistent histories, early attempts, stranded outbox rows, unexpected deliveries and deaths', async () => {
    const ids = await make(4);
    await settle(ids[0]!, ['transient', 'sent']);
    await t.pool.query('UPDATE notifications SET attempts = 3, max_attempts = 5 WHERE id = $1', [ids[0]]); // counter ≠ history
    await settle(ids[1]!, ['transient', 'sent'], { gapMs: -150 }); // attempt 2 before it was due
    await settle(ids[2]!, ['permanent']);
    await settle(ids[3]!, ['sent']);
    await t.pool.query("UPDATE attempts SET outcome = 'transient' WHERE notification_id = $1", [ids[3]]); // sent without a sent attempt
    await t.pool.query(
      "UPDATE outbox SET published_at = NULL, created_at = now() - interval '1 minute' WHERE id = (SELECT min(id) FROM outbox)",
    );
    const report = await auditRun({
      scenario: 'broken',
      db,
      ids,
      deliveries: [got(ids[0]!), got(ids[1]!), got(ids[3]!), got('ntf_01JSOMEONEELSEXXXXXXXXXXXX')],
      retry,
    });
    const text = report.problems.join('\n');
    expect(text).toMatch(new RegExp(`${ids[0]}: attempts=3 but 2 attempt rows`));
    expect(text).toMatch(new RegExp(`${ids[1]}: attempt 2 started \\d+ ms before it was due`));
    expect(text).toMatch(new RegExp(`${ids[3]}: state sent with 0 'sent' attempts`));
    expect(text).toMatch(/1 outbox rows unpublished for more than 10000 ms/);
    expect(text).toMatch(/never enqueued/);
    expect(text).toMatch(/1 notifications dead \(\{"permanent":1\}\), at most 0 expected/);
    expect(report.early).toBe(1);
  });
});
