import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createKeyedScheduler } from './scheduler.js';

/** A promise with its resolve function, to hold tasks open until the test lets go. */
function gate() {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

describe('KeyedScheduler', () => {
  it('never runs more than maxInFlight tasks and runs different keys concurrently', async () => {
    const s = createKeyedScheduler({ maxInFlight: 3 });
    let now = 0;
    let max = 0;
    const gates = Array.from({ length: 10 }, gate);
    gates.forEach((g, i) =>
      s.push(`k${i}`, async () => {
        now++;
        max = Math.max(max, now);
        await g.promise;
        now--;
      }),
    );
    expect(s.running).toBe(3);
    expect(s.size).toBe(10);
    gates.forEach((g) => g.open());
    await s.whenDrained();
    expect(max).toBe(3);
    expect(s.size).toBe(0);
  });

  it('runs the tasks of one key one at a time, in push order, while other keys pass', async () => {
    const s = createKeyedScheduler({ maxInFlight: 4 });
    const log: string[] = [];
    const slow = gate();
    s.push('a', async () => {
      log.push('a1 start');
      await slow.promise;
      log.push('a1 end');
    });
    s.push('a', async () => void log.push('a2'));
    for (let i = 0; i < 5; i++) s.push(`b${i}`, async () => void log.push(`b${i}`));
    await s.whenSizeBelow(3);
    expect(log).toEqual(['a1 start', 'b0', 'b1', 'b2', 'b3', 'b4']);
    slow.open();
    await s.whenDrained();
    expect(log.slice(-2)).toEqual(['a1 end', 'a2']);
  });

  it('retries a task later, keeping its key blocked but freeing its permit', async () => {
    const s = createKeyedScheduler({ maxInFlight: 1 });
    const log: string[] = [];
    let tries = 0;
    s.push('a', async () => {
      tries++;
      log.push(`a1 try ${tries}`);
      return tries < 3 ? { retryInMs: 5 } : undefined;
    });
    s.push('a', async () => void log.push('a2'));
    s.push('b', async () => void log.push('b1'));
    await s.whenDrained();
    expect(log).toEqual(['a1 try 1', 'b1', 'a1 try 2', 'a1 try 3', 'a2']);
  });

  it('close() drops waiting tasks and lets running ones finish', async () => {
    const s = createKeyedScheduler({ maxInFlight: 2 });
    const g = gate();
    const done: string[] = [];
    for (const k of ['a', 'b', 'c', 'd']) {
      s.push(k, async () => {
        await g.promise;
        done.push(k);
      });
    }
    expect(s.close()).toBe(2);
    s.push('e', async () => void done.push('e'));
    g.open();
    await s.whenIdle();
    expect(done.sort()).toEqual(['a', 'b']);
    expect(s.size).toBe(0);
  });

  it('survives a throwing task and reports it', async () => {
    const errors: unknown[] = [];
    const s = createKeyedScheduler({ maxInFlight: 1, onError: (e) => errors.push(e) });
    s.push('a', async () => {
      throw new Error('boom');
    });
    s.push('a', async () => undefined);
    await s.whenDrained();
    expect(errors).toHaveLength(1);
  });

  it('keeps per-key order and the bound for any interleaving (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: 3 })), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 4 }),
        async (jobs, maxInFlight) => {
          const s = createKeyedScheduler({ maxInFlight });
          const seen = new Map<number, number[]>();
          const active = new Set<number>();
          let now = 0;
          let max = 0;
          jobs.forEach(([key, ticks], seq) =>
            s.push(String(key), async () => {
              expect(active.has(key)).toBe(false);
              active.add(key);
              now++;
              max = Math.max(max, now);
              for (let t = 0; t < ticks; t++) await Promise.resolve();
              seen.set(key, [...(seen.get(key) ?? []), seq]);
              active.delete(key);
              now--;
            }),
          );
          await s.whenDrained();
          expect(max).toBeLessThanOrEqual(maxInFlight);
          for (const order of seen.values()) expect(order).toEqual([...order].sort((a, b) => a - b));
        },
      ),
    );
  });

  it("release() lets the key's next task start while the first finishes; its permit is held until it ends", async () => {
    const s = createKeyedScheduler({ maxInFlight: 4 });
    const log: string[] = [];
    const finish = gate();
    const told: boolean[] = [];
    const called = gate();
    s.push('a', async (release) => {
      log.push('a1 call');
      await called.promise; // the provider call; a2 and a3 are queued meanwhile
      told.push(release());
      told.push(release()); // at most once
      await finish.promise;
      log.push('a1 written');
    });
    s.push('a', async () => {
      log.push('a2 call');
    });
    s.push('a', async (release) => {
      log.push('a3 call');
      told.push(release()); // nothing of its key behind it
    });
    called.open();
    await s.whenSizeBelow(2);
    expect(log).toEqual(['a1 call', 'a2 call', 'a3 call']);
    expect(told).toEqual([true, false, false]); // release() says whether the key's next task was waiting
    expect(s.running).toBe(1);
    finish.open();
    await s.whenDrained();
    expect(log).toEqual(['a1 call', 'a2 call', 'a3 call', 'a1 written']);
  });

  it('a task that released its key and asks for a retry runs again when the key is free', async () => {
    const s = createKeyedScheduler({ maxInFlight: 4 });
    const log: string[] = [];
    let tries = 0;
    const second = gate();
    s.push('a', async (release) => {
      tries++;
      log.push(`a1 try ${tries}`);
      if (tries > 1) return undefined;
      release();
      await second.promise;
      return { retryInMs: 1 };
    });
    s.push('a', async () => {
      log.push('a2');
      second.open();
    });
    await s.whenDrained();
    expect(log).toEqual(['a1 try 1', 'a2', 'a1 try 2']);
    expect(s.size).toBe(0);
  });
});
