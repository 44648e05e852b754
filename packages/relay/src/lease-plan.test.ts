import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { planLeases } from './lease-plan.js';

describe('planLeases', () => {
  it('gives a lone instance every slot', () => {
    expect(planLeases({ instanceId: 'a', liveInstances: ['a'], slotCount: 64, held: [] })).toEqual({
      target: 64,
      release: [],
      acquire: 64,
    });
  });

  it('splits 64 slots 22/21/21 by instance id order', () => {
    const live = ['c', 'a', 'b'];
    const targets = live.map((id) => planLeases({ instanceId: id, liveInstances: live, slotCount: 64, held: [] }).target);
    expect(targets).toEqual([21, 22, 21]);
  });

  it('releases its highest slots when a newcomer lowers its share', () => {
    const held = Array.from({ length: 64 }, (_, i) => i);
    const plan = planLeases({ instanceId: 'a', liveInstances: ['a', 'b'], slotCount: 64, held });
    expect(plan.target).toBe(32);
    expect(plan.acquire).toBe(0);
    expect([...plan.release].sort((x, y) => x - y)).toEqual(Array.from({ length: 32 }, (_, i) => 32 + i));
  });

  it('counts itself even when its heartbeat is not in the live list yet', () => {
    expect(planLeases({ instanceId: 'z', liveInstances: ['a'], slotCount: 10, held: [] }).target).toBe(5);
  });

  it('shares always add up to the slot count and differ by at most one', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 4096 }),
        (live, slotCount) => {
          const targets = live.map((id) => planLeases({ instanceId: id, liveInstances: live, slotCount, held: [] }).target);
          expect(targets.reduce((a, b) => a + b, 0)).toBe(slotCount);
          expect(Math.max(...targets) - Math.min(...targets)).toBeLessThanOrEqual(1);
        },
      ),
    );
  });

  it('after everyone applies its plan, no slot is wanted by two instances (a plan never takes held slots)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 128 }),
        fc.integer({ min: 0, max: 1_000 }),
        (n, slotCount, seed) => {
          const ids = Array.from({ length: n }, (_, i) => `r${i}`);
          // An arbitrary starting assignment (some slots free), then rounds of plan + apply.
          const owner = new Map<number, string | null>();
          for (let s = 0; s < slotCount; s++) owner.set(s, (s * 7 + seed) % 3 === 0 ? null : ids[(s + seed) % n]!);
          for (let round = 0; round < 3; round++) {
            for (const id of ids) {
              const held = [...owner].filter(([, o]) => o === id).map(([s]) => s);
              const plan = planLeases({ instanceId: id, liveInstances: ids, slotCount, held });
              for (const s of plan.release) owner.set(s, null);
              let want = plan.acquire;
              for (const [s, o] of owner) {
                if (want === 0) break;
                if (o === null) {
                  owner.set(s, id);
                  want--;
                }
              }
            }
          }
          const counts = ids.map((id) => [...owner.values()].filter((o) => o === id).length);
          expect(counts.reduce((a, b) => a + b, 0)).toBe(slotCount);
          expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
        },
      ),
    );
  });
});
