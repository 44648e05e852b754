import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPeriodicService } from './periodic.js';

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

  it('reports a failed run and keeps its schedule', async () => {
    vi.useFakeTimers();
    const errors: unknown[] = [];
    let runs = 0;
    const service = createPeriodicService({
      name: 't',
      intervalMs: 50,
      run: async () => {
        runs++;
        throw new Error(`run ${runs}`);
      },
      onError: (e) => errors.push(e),
    });
    service.start();
    await vi.advanceTimersByTimeAsync(120);
    expect(runs).toBe(2);
    expect(errors.map((e) => (e as Error).message)).toEqual(['run 1', 'run 2']);
    await service.stop();
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
