import type { SqlExecutor } from '@notify/outbox';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { planOutcome } from './outcome.js';
import { createOutcomeWriter, type OutcomeFlush } from './outcome-writer.js';
import type { RecordOutcomeParams } from './record.js';

const NOW = new Date('2026-05-01T12:00:00Z');

/**
 * A stand-in for PostgreSQL that applies the statement's guard (`attempts = attempt − 1`) per
 * row and refuses a whole statement that holds a poisoned id, as a CHECK violation would. Pure
 * unit test of the writer's grouping; the SQL itself is tested on PostgreSQL (test/batching.test.ts).
 */
function fakeDatabase(poison: ReadonlySet<string> = new Set()) {
  const attempts = new Map<string, number>();
  const statements: string[][] = [];
  let down = false;
  const db: SqlExecutor = {
    async query<R>(_text: string, values: readonly unknown[]) {
      const ids = values[0] as string[];
      const tries = values[1] as number[];
      statements.push([...ids]);
      await Promise.resolve();
      if (down) throw new Error('connection refused');
      const bad = ids.find((id) => poison.has(id));
      if (bad) throw new Error(`new row for relation "notifications" violates check constraint (${bad})`);
      const rows: { ord: number }[] = [];
      ids.forEach((id, i) => {
        if ((attempts.get(id) ?? 0) === (tries[i] as number) - 1) {
          attempts.set(id, tries[i] as number);
          rows.push({ ord: i + 1 });
        }
      });
      return { rows: rows as R[] };
    },
  };
  return {
    db,
    statements,
    attempts,
    setDown(value: boolean) {
      down = value;
    },
  };
}

function outcome(id: string, attempt = 1): RecordOutcomeParams {
  const notification = { id, tenant_id: 't', channel: 'webhook' as const, recipient: 'https://example.com/hook', traceparent: null };
  const plan = planOutcome({
    notification: { state: 'queued', max_attempts: 5, expires_at: new Date(NOW.getTime() + 86_400_000) },
    attempt,
    result: { kind: 'sent', providerStatus: '200' },
    now: NOW,
    retry: { baseDelayMs: 1000, maxDelayMs: 30_000, jitter: 0 },
    tiers: [],
    random: () => 0.5,
  });
  return { notification, plan, startedAt: NOW, finishedAt: NOW };
}

describe('createOutcomeWriter', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes outcomes that arrive within the delay as one statement and tells each caller its own result', async () => {
    vi.useFakeTimers();
    const f = fakeDatabase();
    f.attempts.set('ntf_b', 1); // b's attempt 1 is already recorded: its guard fails
    const flushes: OutcomeFlush[] = [];
    const writer = createOutcomeWriter(f.db, { maxBatch: 64, maxDelayMs: 5, onFlush: (x) => flushes.push(x) });
    const a = writer.record(outcome('ntf_a'));
    await vi.advanceTimersByTimeAsync(3);
    const b = writer.record(outcome('ntf_b'));
    const c = writer.record(outcome('ntf_c'));
    expect(writer.pending).toBe(3);
    await vi.advanceTimersByTimeAsync(1);
    expect(f.statements).toHaveLength(0); // 4 ms after the first: still waiting
    await vi.advanceTimersByTimeAsync(1);
    expect(await Promise.all([a, b, c])).toEqual([true, false, true]);
    expect(f.statements).toEqual([['ntf_a', 'ntf_b', 'ntf_c']]);
    expect(flushes).toMatchObject([{ size: 3, recorded: 2, failed: 0, isolated: false }]);
  });

  it('writes at once when maxBatch outcomes are waiting', async () => {
    vi.useFakeTimers();
    const f = fakeDatabase();
    const writer = createOutcomeWriter(f.db, { maxBatch: 2, maxDelayMs: 1000 });
    const p = [writer.record(outcome('ntf_a')), writer.record(outcome('ntf_b')), writer.record(outcome('ntf_c'))];
    expect(f.statements).toEqual([['ntf_a', 'ntf_b']]);
    expect(writer.pending).toBe(1);
    await vi.advanceTimersByTimeAsync(1000);
    expect(f.statements).toEqual([['ntf_a', 'ntf_b'], ['ntf_c']]);
    expect(await Promise.all(p)).toEqual([true, true, true]);
  });

  it('with delay 0 groups the outcomes of one event-loop turn', async () => {
    const f = fakeDatabase();
    const writer = createOutcomeWriter(f.db, { maxBatch: 64, maxDelayMs: 0 });
    const p = [writer.record(outcome('ntf_a')), writer.record(outcome('ntf_b'))];
    expect(await Promise.all(p)).toEqual([true, true]);
    expect(f.statements).toEqual([['ntf_a', 'ntf_b']]);
  });

  it('puts a second outcome of the same notification in a later transaction, after the first committed: first wins', async () => {
    const f = fakeDatabase();
    const writer = createOutcomeWriter(f.db, { maxBatch: 64, maxDelayMs: 0 });
    const p = [writer.record(outcome('ntf_a')), writer.record(outcome('ntf_a')), writer.record(outcome('ntf_b'))];
    expect(await Promise.all(p)).toEqual([true, false, true]);
    expect(f.statements).toEqual([['ntf_a', 'ntf_b'], ['ntf_a']]);
  });

  it('isolates an outcome the database refuses: the others of its group are written one by one and succeed', async () => {
    const f = fakeDatabase(new Set(['ntf_bad']));
    const flushes: OutcomeFlush[] = [];
    const writer = createOutcomeWriter(f.db, { maxBatch: 64, maxDelayMs: 0, onFlush: (x) => flushes.push(x) });
    const results = await Promise.allSettled([
      writer.record(outcome('ntf_a')),
      writer.record(outcome('ntf_bad')),
      writer.record(outcome('ntf_b')),
    ]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : 'rejected'))).toEqual([true, 'rejected', true]);
    expect(f.statements).toEqual([['ntf_a', 'ntf_b', 'ntf_bad'], ['ntf_a'], ['ntf_bad'], ['ntf_b']]);
    await writer.flush(); // the report comes after the last caller heard back
    expect(flushes).toMatchObject([{ size: 3, recorded: 2, failed: 1, isolated: true }]);
  });

  it('fails every outcome of a group when the database is down, and the same outcomes succeed when retried', async () => {
    const f = fakeDatabase();
    const writer = createOutcomeWriter(f.db, { maxBatch: 64, maxDelayMs: 0 });
    f.setDown(true);
    const failed = await Promise.allSettled([writer.record(outcome('ntf_a')), writer.record(outcome('ntf_b'))]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(f.attempts.size).toBe(0);
    f.setDown(false);
    expect(await Promise.all([writer.record(outcome('ntf_a')), writer.record(outcome('ntf_b'))])).toEqual([true, true]);
  });

  it('flush() writes what is waiting without waiting for the delay and resolves once everything is settled', async () => {
    const f = fakeDatabase();
    const writer = createOutcomeWriter(f.db, { maxBatch: 64, maxDelayMs: 60_000 });
    const p = writer.record(outcome('ntf_a'));
    const q = writer.record(outcome('ntf_a')); // waits behind the first
    await writer.flush();
    expect(writer.pending).toBe(0);
    expect(writer.writing).toBe(0);
    expect(f.statements).toEqual([['ntf_a'], ['ntf_a']]);
    expect(await Promise.all([p, q])).toEqual([true, false]);
  });

  it('with yetToRecord, waits out the delay while a running delivery may still join, and writes at once when none can', async () => {
    vi.useFakeTimers();
    const f = fakeDatabase();
    let calling = 2; // a (recording now) and the next delivery of its busy key, in its provider call
    const writer = createOutcomeWriter(f.db, { maxBatch: 64, maxDelayMs: 20, yetToRecord: () => calling });
    const a = writer.record(outcome('ntf_a'));
    calling = 1; // a returns its permit right after record (providerReturned)
    await vi.advanceTimersByTimeAsync(10);
    expect(f.statements).toHaveLength(0); // the one in its provider call may still join: wait
    const b = writer.record(outcome('ntf_b')); // it records; its key's next one starts as it returns
    await vi.advanceTimersByTimeAsync(5);
    expect(f.statements).toHaveLength(0);
    const c = writer.record(outcome('ntf_c')); // that one records: it still counts until it returns
    calling = 0; // ... and nothing else is in a provider call
    await Promise.resolve();
    expect(f.statements).toEqual([['ntf_a', 'ntf_b', 'ntf_c']]); // 15 ms after the first, not 20
    expect(await Promise.all([a, b, c])).toEqual([true, true, true]);
  });

  it('with yetToRecord, counts a delivery started right after record (the next one of its key) as yet to record', async () => {
    vi.useFakeTimers();
    const f = fakeDatabase();
    let calling = 1; // a, recording now
    const writer = createOutcomeWriter(f.db, { maxBatch: 64, maxDelayMs: 20, yetToRecord: () => calling });
    const a = writer.record(outcome('ntf_a'));
    // providerReturned, in the same job: a returns its permit and its key's next delivery takes one (still 1)
    await Promise.resolve();
    expect(f.statements).toHaveLength(0);
    calling = 0; // that one ends without an outcome (skipped): the delay bounds the wait
    await vi.advanceTimersByTimeAsync(20);
    expect(f.statements).toEqual([['ntf_a']]);
    expect(await a).toBe(true);
  });

  it('waits up to busyKeyDelayMs while the key of a waiting outcome has its next delivery running, else maxDelayMs', async () => {
    vi.useFakeTimers();
    const f = fakeDatabase();
    const writer = createOutcomeWriter(f.db, { maxBatch: 64, maxDelayMs: 5, busyKeyDelayMs: 20 });
    const quiet = writer.record(outcome('ntf_q'), () => false);
    await vi.advanceTimersByTimeAsync(5);
    expect(f.statements).toEqual([['ntf_q']]); // nothing behind its key: the short delay
    const a = writer.record(outcome('ntf_a'), () => true); // its key's next delivery runs
    await vi.advanceTimersByTimeAsync(10);
    expect(f.statements).toHaveLength(1);
    const b = writer.record(outcome('ntf_b'), () => true); // that next delivery's outcome joins
    await vi.advanceTimersByTimeAsync(9);
    expect(f.statements).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(f.statements).toEqual([['ntf_q'], ['ntf_a', 'ntf_b']]); // 20 ms after a
    expect(await Promise.all([quiet, a, b])).toEqual([true, true, true]);
  });

  it('rejects bad options', () => {
    const f = fakeDatabase();
    expect(() => createOutcomeWriter(f.db, { maxBatch: 0, maxDelayMs: 5 })).toThrow(/maxBatch/);
    expect(() => createOutcomeWriter(f.db, { maxBatch: 1, maxDelayMs: -1 })).toThrow(/maxDelayMs/);
  });
});
