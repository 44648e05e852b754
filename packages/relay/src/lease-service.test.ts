import type { SqlExecutor } from '@notify/outbox';
import { silentLogger } from '@notify/runtime';
import { ManualClock } from '@notify/runtime/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type RelayEventMap, createRelayEvents } from './events.js';
import { createLeaseService } from './lease-service.js';

// The lease service's rounds against an in-memory model of relay_instances and relay_leases.
// The statements themselves (and the advisory-lock fence) are tested against PostgreSQL in
// test/leases.test.ts; here: what a round does with their answers.

const SLOTS = 8;
const TTL_MS = 10_000;

/** relay_instances and relay_leases in memory, answering the five lease statements by their first words. */
function leaseTables(clock: ManualClock) {
  const instances = new Map<string, number>(); // id → expires_at
  const leases = Array.from({ length: SLOTS }, (_, slot) => ({ slot, owner: null as string | null, expiresAt: 0 }));
  /** Slots whose exclusive advisory lock is not available (a batch of the previous owner in flight). */
  const fenced = new Set<number>();
  const statements: string[] = [];
  let failNext: Error | null = null;
  const slots = (list: typeof leases) => list.map((l) => ({ slot: l.slot }));
  const db: SqlExecutor = {
    async query<R>(text: string, values: readonly unknown[]) {
      if (failNext) {
        const e = failNext;
        failNext = null;
        throw e;
      }
      const sql = text.replace(/\s+/g, ' ').trim();
      const [id] = values as [string];
      const now = clock.now().getTime();
      let rows: object[];
      if (sql.startsWith('WITH me AS ( INSERT INTO relay_instances')) {
        statements.push('heartbeat');
        instances.set(id, (values[2] as Date).getTime());
        for (const [other, exp] of instances) if (exp <= now) instances.delete(other);
        rows = [...instances.keys()].sort().map((instance_id) => ({ instance_id }));
      } else if (sql.startsWith('UPDATE relay_leases SET expires_at')) {
        statements.push('renew');
        const mine = leases.filter((l) => l.owner === id);
        for (const l of mine) l.expiresAt = (values[1] as Date).getTime();
        rows = slots(mine);
      } else if (sql.startsWith('UPDATE relay_leases SET owner = NULL')) {
        const only = values[1] as number[] | null;
        statements.push(only ? `release ${only.join(',')}` : 'release all');
        const gone = leases.filter((l) => l.owner === id && (!only || only.includes(l.slot)));
        for (const l of gone) l.owner = null;
        rows = slots(gone);
      } else if (sql.startsWith('UPDATE relay_leases l SET owner')) {
        const count = values[3] as number;
        statements.push(`acquire ${count}`);
        const free = leases.filter((l) => (l.owner === null || l.expiresAt <= now) && !fenced.has(l.slot)).slice(0, count);
        for (const l of free) {
          l.owner = id;
          l.expiresAt = (values[2] as Date).getTime();
        }
        rows = slots(free);
      } else if (sql.startsWith('DELETE FROM relay_instances')) {
        statements.push('remove');
        instances.delete(id);
        rows = [];
      } else {
        throw new Error(`unexpected statement: ${sql}`);
      }
      return { rows: rows as R[] };
    },
  };
  return {
    db,
    instances,
    leases,
    fenced,
    statements,
    failNextWith: (e: Error) => void (failNext = e),
    owners: () => leases.map((l) => l.owner),
  };
}

function setup(instanceId = 'a') {
  const clock = new ManualClock();
  const tables = leaseTables(clock);
  const events = createRelayEvents(silentLogger);
  const changes: RelayEventMap['leaseChanged'][] = [];
  const errors: RelayEventMap['error'][] = [];
  events.on('leaseChanged', (e) => void changes.push(e));
  events.on('error', (e) => void errors.push(e));
  let wakes = 0;
  const leases = createLeaseService(
    { instanceId, leaseTtlMs: TTL_MS, heartbeatIntervalMs: 100 },
    { db: tables.db, clock, logger: silentLogger, events, slotCount: () => SLOTS, onAcquired: () => void wakes++ },
  );
  return { clock, tables, leases, changes, errors, wakes: () => wakes };
}

afterEach(() => void vi.useRealTimers());

describe('lease service', () => {
  it('a lone instance takes every slot, reports the change once and wakes the publish loop', async () => {
    const { leases, tables, changes, wakes } = setup();
    expect(await leases.runOnce()).toEqual({
      live: ['a'],
      slots: [0, 1, 2, 3, 4, 5, 6, 7],
      acquired: [0, 1, 2, 3, 4, 5, 6, 7],
      released: [],
    });
    expect(leases.slots()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(tables.statements).toEqual(['heartbeat', 'renew', 'acquire 8']);
    expect(changes).toEqual([{ slots: [0, 1, 2, 3, 4, 5, 6, 7], acquired: [0, 1, 2, 3, 4, 5, 6, 7], released: [] }]);
    expect(wakes()).toBe(1);

    await leases.runOnce(); // nothing to change: renew only, no event
    expect(tables.statements.slice(3)).toEqual(['heartbeat', 'renew']);
    expect(changes).toHaveLength(1);
    expect(wakes()).toBe(1);
  });

  it('gives up its highest slots when another instance joins, without waking the loop', async () => {
    const { leases, tables, clock, changes, wakes } = setup();
    await leases.runOnce();
    tables.instances.set('b', clock.now().getTime() + TTL_MS);
    expect(await leases.runOnce()).toMatchObject({ live: ['a', 'b'], slots: [0, 1, 2, 3], released: [4, 5, 6, 7], acquired: [] });
    expect(tables.statements.slice(3)).toEqual(['heartbeat', 'renew', 'release 7,6,5,4']);
    expect(changes.at(-1)).toEqual({ slots: [0, 1, 2, 3], acquired: [], released: [4, 5, 6, 7] });
    expect(wakes()).toBe(1);
    expect(tables.owners()).toEqual(['a', 'a', 'a', 'a', null, null, null, null]);
  });

  it('takes a fenced slot only in a later round, once the fence is gone', async () => {
    const { leases, tables } = setup();
    tables.fenced.add(3);
    expect((await leases.runOnce()).slots).toEqual([0, 1, 2, 4, 5, 6, 7]);
    tables.fenced.clear();
    expect(await leases.runOnce()).toMatchObject({ slots: [0, 1, 2, 3, 4, 5, 6, 7], acquired: [3] });
  });

  it('keeps only what renewing returns: a slot taken over meanwhile is dropped from its set', async () => {
    const { leases, tables, clock } = setup();
    await leases.runOnce();
    tables.leases[5]!.owner = 'z'; // another instance took it after this one's lease lapsed
    tables.instances.set('z', clock.now().getTime() + TTL_MS);
    tables.instances.set('y', clock.now().getTime() + TTL_MS); // three live instances: fair share 3 for "a"
    const round = await leases.runOnce();
    expect(round.slots).toEqual([0, 1, 2]);
    expect(round.released).toEqual([3, 4, 6, 7]);
  });

  it('after stop it still heartbeats and renews (valid until released) but does not rebalance; releaseAll gives up everything and leaves', async () => {
    const { leases, tables, clock } = setup();
    await leases.runOnce();
    tables.instances.set('b', clock.now().getTime() + TTL_MS);
    await leases.stop();
    expect(await leases.runOnce()).toMatchObject({ live: ['a', 'b'], slots: [0, 1, 2, 3, 4, 5, 6, 7], released: [], acquired: [] });
    expect(tables.statements.slice(3)).toEqual(['heartbeat', 'renew']);
    await leases.releaseAll();
    expect(tables.statements.slice(5)).toEqual(['release all', 'remove']);
    expect(leases.slots()).toEqual([]);
    expect(tables.owners().every((o) => o === null)).toBe(true);
    expect([...tables.instances.keys()]).toEqual(['b']);
  });

  it('releaseAll reports a database failure as error "stop" and holds nothing afterwards', async () => {
    const { leases, tables, errors } = setup();
    await leases.runOnce();
    const boom = new Error('connection refused');
    tables.failNextWith(boom);
    await leases.releaseAll();
    expect(errors).toEqual([{ error: boom, stage: 'stop' }]);
    expect(leases.slots()).toEqual([]);
  });

  it('runs a round every heartbeatIntervalMs; a failed round is reported as error "lease" and the next one runs', async () => {
    vi.useFakeTimers();
    const { leases, tables, errors } = setup();
    leases.start();
    await vi.advanceTimersByTimeAsync(99);
    expect(tables.statements).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(leases.slots()).toHaveLength(8);
    const boom = new Error('timeout');
    tables.failNextWith(boom);
    await vi.advanceTimersByTimeAsync(100);
    expect(errors).toEqual([{ error: boom, stage: 'lease' }]);
    await vi.advanceTimersByTimeAsync(100);
    expect(tables.statements.filter((s) => s === 'heartbeat')).toHaveLength(2);
    expect(await leases.stop()).toBe(true);
    leases.start(); // a stopped service stays stopped
    await vi.advanceTimersByTimeAsync(1_000);
    expect(tables.statements.filter((s) => s === 'heartbeat')).toHaveLength(2);
  });
});
