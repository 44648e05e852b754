import type { SqlExecutor } from '@notify/outbox';
import { silentLogger } from '@notify/runtime';
import { ManualClock } from '@notify/runtime/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type RelayEventMap, createRelayEvents } from './events.js';
import { PURGE_MAX_STATEMENTS, createPurgeService } from './purge-service.js';

// The purge service's rounds against a scripted `outboxPurgePublished`: who purges, how many
// statements a round makes, and when it stops. The DELETE itself runs against PostgreSQL in
// test/purge.test.ts.

const BATCH = 10;
const RETENTION_MS = 60_000;

/** Answers each purge statement with the next count of `deleted` (then 0); `gate`, when set, holds a statement until resolved. */
function purgeDb(deleted: number[]) {
  const calls: { before: Date; limit: number }[] = [];
  const db: SqlExecutor & { calls: typeof calls; gate: Promise<void> | null; failNext: Error | null } = {
    calls,
    gate: null,
    failNext: null,
    async query<R>(text: string, values: readonly unknown[]) {
      expect(text).toMatch(/DELETE FROM outbox/);
      if (db.failNext) {
        const e = db.failNext;
        db.failNext = null;
        throw e;
      }
      calls.push({ before: values[0] as Date, limit: values[1] as number });
      if (db.gate) await db.gate;
      return { rows: [{ n: deleted.shift() ?? 0 }] as R[] };
    },
  };
  return db;
}

function setup(deleted: number[], held: readonly number[] = [0, 1]) {
  const clock = new ManualClock();
  const db = purgeDb(deleted);
  const events = createRelayEvents(silentLogger);
  const purged: number[] = [];
  const errors: RelayEventMap['error'][] = [];
  events.on('purged', (e) => void purged.push(e.count));
  events.on('error', (e) => void errors.push(e));
  const heldSlots = { current: held };
  const purge = createPurgeService(
    { retentionMs: RETENTION_MS, purgeIntervalMs: 5_000, purgeBatchSize: BATCH },
    { db, clock, logger: silentLogger, events, heldSlots: () => heldSlots.current },
  );
  return { clock, db, purge, purged, errors, heldSlots };
}

afterEach(() => void vi.useRealTimers());

describe('purge service', () => {
  it('only the holder of slot 0 purges; the others do nothing and say nothing', async () => {
    const { purge, db, purged, heldSlots } = setup([5], [1, 2, 3]);
    expect(await purge.runOnce()).toBeNull();
    expect(db.calls).toEqual([]);
    expect(purged).toEqual([]);
    heldSlots.current = [0];
    expect(await purge.runOnce()).toBe(5);
  });

  it('deletes in batches of purgeBatchSize, rows published before now − retention, until a short batch', async () => {
    const { purge, db, purged, clock } = setup([BATCH, BATCH, 3, BATCH]);
    expect(await purge.runOnce()).toBe(2 * BATCH + 3);
    expect(db.calls).toHaveLength(3);
    expect(db.calls.every((c) => c.limit === BATCH && c.before.getTime() === clock.now().getTime() - RETENTION_MS)).toBe(true);
    expect(purged).toEqual([2 * BATCH + 3]);
    expect(await purge.runOnce()).toBe(BATCH); // the next round continues
    expect(purged).toEqual([2 * BATCH + 3, BATCH]);
  });

  it('reports an empty round too (purged 0)', async () => {
    const { purge, purged } = setup([]);
    expect(await purge.runOnce()).toBe(0);
    expect(purged).toEqual([0]);
  });

  it(`makes at most ${PURGE_MAX_STATEMENTS} statements per round`, async () => {
    const { purge, db } = setup(Array.from({ length: 500 }, () => BATCH));
    expect(await purge.runOnce()).toBe(PURGE_MAX_STATEMENTS * BATCH);
    expect(db.calls).toHaveLength(PURGE_MAX_STATEMENTS);
  });

  it('stop ends a round after its current statement and waits for it', async () => {
    const { purge, db, purged } = setup(Array.from({ length: 50 }, () => BATCH));
    let release!: () => void;
    db.gate = new Promise((r) => (release = r));
    const round = purge.runOnce();
    await vi.waitFor(() => expect(db.calls).toHaveLength(1));
    void purge.stop();
    release();
    expect(await round).toBe(BATCH);
    expect(db.calls).toHaveLength(1);
    expect(purged).toEqual([BATCH]);
  });

  it('first round after min(purgeIntervalMs, 1 s), then every purgeIntervalMs; a failed round is reported as error "purge"', async () => {
    vi.useFakeTimers();
    const { purge, db, errors, purged } = setup([]);
    purge.start();
    await vi.advanceTimersByTimeAsync(999);
    expect(purged).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(purged).toEqual([0]);
    const boom = new Error('lock timeout');
    db.failNext = boom;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(errors).toEqual([{ error: boom, stage: 'purge' }]);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(purged).toEqual([0, 0]);
    expect(await purge.stop()).toBe(true);
    purge.start(); // a stopped service stays stopped
    await vi.advanceTimersByTimeAsync(60_000);
    expect(purged).toEqual([0, 0]);
  });
});
