import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
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

  it('keeps per-key order and both bounds for any interleaving, with or without release (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 4 })), {
          minLength: 1,
          maxLength: 40,
        }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 4 }),
        async (jobs, maxInFlight, extra) => {
          const maxRunning = maxInFlight + extra;
          const errors: unknown[] = [];
          const s = createKeyedScheduler({ maxInFlight, maxRunning, onError: (e) => errors.push(e) });
          const started = new Map<number, number[]>();
          /** Keys whose current task has neither released nor ended. */
          const holdingKey = new Set<number>();
          let holding = 0;
          let running = 0;
          let maxHolding = 0;
          let maxRunningSeen = 0;
          jobs.forEach(([key, ticks, releaseAt], seq) =>
            s.push(String(key), async (release) => {
              expect(holdingKey.has(key)).toBe(false); // the key's previous task released or ended
              holdingKey.add(key);
              started.set(key, [...(started.get(key) ?? []), seq]);
              holding++;
              running++;
              maxHolding = Math.max(maxHolding, holding);
              maxRunningSeen = Math.max(maxRunningSeen, running);
              expect(s.holdingPermits).toBeLessThanOrEqual(maxInFlight);
              expect(s.running).toBeLessThanOrEqual(maxRunning);
              let released = false;
              for (let t = 0; t <= ticks; t++) {
                if (t === releaseAt) {
                  holdingKey.delete(key);
                  holding--;
                  released = true;
                  release();
                }
                await Promise.resolve();
              }
              if (!released) {
                holdingKey.delete(key);
                holding--;
              }
              running--;
            }),
          );
          await s.whenDrained();
          expect(errors).toEqual([]);
          expect(maxHolding).toBeLessThanOrEqual(maxInFlight);
          expect(maxRunningSeen).toBeLessThanOrEqual(maxRunning);
          expect(s.running).toBe(0);
          expect(s.holdingPermits).toBe(0);
          for (const order of started.values()) expect(order).toEqual([...order].sort((a, b) => a - b));
        },
      ),
    );
  });

  it('a task that released gives its permit back: tasks of other keys start while it finishes, up to maxRunning', async () => {
    const s = createKeyedScheduler({ maxInFlight: 2, maxRunning: 4 });
    const commits = Array.from({ length: 6 }, gate);
    const started: number[] = [];
    commits.forEach((commit, i) =>
      s.push(`k${i}`, async (release) => {
        started.push(i);
        release(); // the provider call returned; the outcome's commit is left
        await commit.promise;
      }),
    );
    // Two permits, yet four started: each gave its permit back while its outcome commits.
    expect(started).toEqual([0, 1, 2, 3]);
    expect(s.running).toBe(4);
    expect(s.holdingPermits).toBe(0);
    expect(s.size).toBe(6);
    commits[2]!.open();
    await s.whenSizeBelow(6);
    expect(started).toEqual([0, 1, 2, 3, 4]); // one ended, one more started: the bound holds
    expect(s.running).toBe(4);
    for (const commit of commits) commit.open();
    await s.whenDrained();
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('bounds tasks holding a permit by maxInFlight however much room maxRunning has', async () => {
    const s = createKeyedScheduler({ maxInFlight: 2, maxRunning: 8 });
    const calls = Array.from({ length: 5 }, gate);
    const commit = gate();
    const started: number[] = [];
    calls.forEach((call, i) =>
      s.push(`k${i}`, async (release) => {
        started.push(i);
        await call.promise;
        release();
        await commit.promise;
      }),
    );
    expect(started).toEqual([0, 1]);
    calls[0]!.open();
    await vi.waitFor(() => expect(started).toEqual([0, 1, 2])); // the permit refilled; 0 still finishing
    expect(s.holdingPermits).toBe(2);
    expect(s.running).toBe(3);
    for (const call of calls) call.open();
    await vi.waitFor(() => expect(s.holdingPermits).toBe(0));
    expect(s.running).toBe(5);
    commit.open();
    await s.whenDrained();
  });

  it('with maxRunning = maxInFlight (the default), a task that released keeps its place until it ends', async () => {
    const s = createKeyedScheduler({ maxInFlight: 2 });
    const commits = Array.from({ length: 3 }, gate);
    const started: number[] = [];
    commits.forEach((commit, i) =>
      s.push(`k${i}`, async (release) => {
        started.push(i);
        release();
        await commit.promise;
      }),
    );
    expect(started).toEqual([0, 1]);
    expect(s.holdingPermits).toBe(0);
    commits[0]!.open();
    await s.whenSizeBelow(3);
    expect(started).toEqual([0, 1, 2]);
    for (const commit of commits) commit.open();
    await s.whenDrained();
  });

  it('whenIdle and close() wait for tasks that released and are still finishing', async () => {
    const s = createKeyedScheduler({ maxInFlight: 1, maxRunning: 2 });
    const commit = gate();
    let ended = false;
    s.push('a', async (release) => {
      release();
      await commit.promise;
      ended = true;
    });
    expect(s.holdingPermits).toBe(0);
    expect(s.close()).toBe(0);
    let idle = false;
    void s.whenIdle().then(() => (idle = true));
    await new Promise((r) => setImmediate(r));
    expect(idle).toBe(false);
    expect(s.running).toBe(1);
    expect(s.size).toBe(1);
    commit.open();
    await s.whenIdle();
    expect(ended).toBe(true);
    expect(s.size).toBe(0);
  });

  it('rejects maxRunning below maxInFlight', () => {
    expect(() => createKeyedScheduler({ maxInFlight: 4, maxRunning: 3 })).toThrow(/maxRunning/);
    expect(() => createKeyedScheduler({ maxInFlight: 4, maxRunning: 4.5 })).toThrow(/maxRunning/);
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
