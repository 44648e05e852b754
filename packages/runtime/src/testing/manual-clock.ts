import type { Clock } from '../clock.js';

/** A clock that moves only when told. For tests and the article's lab. */
export class ManualClock implements Clock {
  #now: number;
  constructor(start: Date | string | number = '2026-05-01T12:00:00Z') {
    this.#now = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.#now);
  }
  /** Moves time forward by `ms`. */
  advance(ms: number): void {
    this.#now += ms;
  }
  /** Sets the time. */
  set(to: Date | string | number): void {
    this.#now = new Date(to).getTime();
  }
}
