import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPeriodicService, failureBackoffMs } from './periodic.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('createPeriodicService', () => {
  it('runs after the first delay, then every interval after the previous run ends, until stopped', async () => {
    vi.useFakeTimers();
    let runs = 0;
    const service = createPeriodicService({ name: 't', intervalMs: 100, firstRunAfterMs: 10, run: async () => ++runs, onError: () => {} });
    service.start();
    service.start(); // a second start changes nothing
    await vi.advanceTimersByTimeAsync(9);
    expect(runs).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(runs).toBe(1);
    await vi.advanceTimersByTimeAsync(100);
    expect(runs).toBe(2);
    expect(await service.stop()).toBe(true);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(runs).toBe(2);
    expect(service.running).toBe(false);
  });

  it('reports a failed run and waits twice as long after each failure in a row, back to the interval after a success', async () => {
    vi.useFakeTimers();
    const errors: unknown[] = [];
    let runs = 0;
    let failing = true;
    const at: number[] = [];
    const start = Date.now();
    const service = createPeriodicService({
      name: 't',
      intervalMs: 50,
      run: async () => {
        runs++;
        at.push(Date.now() - start);
        if (failing) throw new Error(`run ${runs}`);
      },
      onError: (e) => errors.push(e),
    });
    service.start();
    await vi.advanceTimersByTimeAsync(750);
    // 50, then 100, 200 and 400 ms after each failure
    expect(at).toEqual([50, 150, 350, 750]);
    expect(errors.map((e) => (e as Error).message)).toEqual(['run 1', 'run 2', 'run 3', 'run 4']);
    failing = false;
    await vi.advanceTimersByTimeAsync(800 + 50);
    expect(at.slice(4)).toEqual([1550, 1600]);
    await service.stop();
  });

  it('keeps its interval after failures when told not to back off', async () => {
    vi.useFakeTimers();
    let runs = 0;
    const service = createPeriodicService({
      name: 't',
      intervalMs: 50,
      backOffOnFailure: false,
      run: async () => {
        runs++;
        throw new Error('down');
      },
      onError: () => {},
    });
    service.start();
    await vi.advanceTimersByTimeAsync(200);
    expect(runs).toBe(4);
    await service.stop();
  });

  it('waits at most 5 s (or its interval, if longer) after failures in a row', () => {
    expect([0, 1, 2, 5, 6, 40].map((n) => failureBackoffMs(250, n))).toEqual([250, 500, 1_000, 5_000, 5_000, 5_000]);
    expect([0, 1, 3].map((n) => failureBackoffMs(30_000, n))).toEqual([30_000, 30_000, 30_000]);
  });

  it('stop waits for a run in progress, within its timeout', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = false;
    const service = createPeriodicService({
      name: 't',
      intervalMs: 1_000,
      firstRunAfterMs: 0,
      run: async () => {
        started = true;
        await gate;
      },
      onError: () => {},
    });
    service.start();
    await vi.waitFor(() => expect(started).toBe(true));
    expect(await service.stop(10)).toBe(false);
    release();
    expect(await service.stop()).toBe(true);
  });

  it('runOnce runs now and returns the result', async () => {
    const service = createPeriodicService({ name: 't', intervalMs: 1_000, run: async () => 42, onError: () => {} });
    expect(await service.runOnce()).toBe(42);
  });
});

describe('a stopped periodic service', () => {
  it('stays stopped: start after stop schedules nothing', async () => {
    vi.useFakeTimers();
    let runs = 0;
    const service = createPeriodicService({ name: 't', intervalMs: 10, run: async () => void runs++, onError: () => {} });
    service.start();
    await service.stop();
    service.start();
    await vi.advanceTimersByTimeAsync(100);
    expect(runs).toBe(0);
    expect(service.running).toBe(false);
  });
});
