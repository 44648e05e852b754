import type { ManualClock } from '@notify/runtime/testing';
import type { Timers } from '../rate-limit.js';

interface Pending {
  readonly id: number;
  readonly due: number;
  readonly callback: () => void;
}

/**
 * Timers driven by a `ManualClock`: nothing fires until the test moves time with
 * `runNext()` / `runUntilIdle()`. For deterministic tests of anything that waits (rate limits).
 */
export class ManualTimers implements Timers {
  readonly #clock: ManualClock;
  #pending: Pending[] = [];
  #nextId = 1;
  constructor(clock: ManualClock) {
    this.#clock = clock;
  }
  setTimeout(callback: () => void, ms: number): unknown {
    const id = this.#nextId++;
    this.#pending.push({ id, due: this.#clock.now().getTime() + Math.max(0, ms), callback });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.#pending = this.#pending.filter((p) => p.id !== handle);
  }
  /** Timers not yet fired. */
  get pending(): number {
    return this.#pending.length;
  }
  /**
   * Moves the clock to the earliest due timer (never backwards) and fires every timer due by
   * then, in due order. Returns false when no timer is pending.
   */
  runNext(): boolean {
    if (this.#pending.length === 0) return false;
    const due = Math.min(...this.#pending.map((p) => p.due));
    if (due > this.#clock.now().getTime()) this.#clock.set(due);
    const now = this.#clock.now().getTime();
    const ready = this.#pending.filter((p) => p.due <= now).sort((a, b) => a.due - b.due || a.id - b.id);
    this.#pending = this.#pending.filter((p) => p.due > now);
    for (const p of ready) p.callback();
    return true;
  }
  /**
   * Alternates "let promises settle" and `runNext()` until no timer is pending and `done()`
   * (default: always) holds. Throws after `maxSteps` to turn a livelock into a failure.
   */
  async runUntilIdle(done: () => boolean = () => true, maxSteps = 100_000): Promise<void> {
    for (let step = 0; step < maxSteps; step++) {
      // Several macrotask turns: resolved promises chain through a few microtask hops.
      await new Promise<void>((r) => setImmediate(r));
      if (this.#pending.length === 0 && done()) return;
      if (!this.runNext()) {
        if (done()) return;
        throw new Error('ManualTimers: no timer pending but the condition does not hold');
      }
    }
    throw new Error(`ManualTimers: still busy after ${maxSteps} steps`);
  }
}
