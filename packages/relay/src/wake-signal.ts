/**
 * A one-slot wake-up flag for a loop that sleeps between rounds: `wait(ms)` resolves after `ms`
 * or as soon as `wake()` is called, whichever comes first. A `wake()` that arrives while the loop
 * is busy is remembered, so the next `wait` returns at once: no notification is lost between
 * "looked for work" and "went to sleep". `wait(ms, { wakeable: false })` ignores `wake()` (used
 * for backoff) but `interrupt()` (stop) ends any wait.
 */
export class WakeSignal {
  #pending = false;
  #resolve: (() => void) | null = null;
  #wakeable = true;
  #timer: NodeJS.Timeout | null = null;
  #interrupted = false;

  /** Ask the loop to run a round now. */
  wake(): void {
    if (this.#resolve && this.#wakeable) this.#finish();
    else this.#pending = true;
  }

  /** End the current wait (and every later one returns at once until `reset`). */
  interrupt(): void {
    this.#interrupted = true;
    if (this.#resolve) this.#finish();
  }

  /** Sleeps up to `ms`. Resolves `true` when woken (or interrupted), `false` on timeout. */
  wait(ms: number, { wakeable = true }: { wakeable?: boolean } = {}): Promise<boolean> {
    if (this.#interrupted) return Promise.resolve(true);
    if (wakeable && this.#pending) {
      this.#pending = false;
      return Promise.resolve(true);
    }
    return new Promise<boolean>((resolve) => {
      this.#wakeable = wakeable;
      this.#resolve = () => resolve(true);
      this.#timer = setTimeout(() => {
        this.#resolve = null;
        this.#timer = null;
        resolve(false);
      }, ms);
    });
  }

  /** Forgets a remembered `wake()` (the loop is about to look for work anyway). */
  clear(): void {
    this.#pending = false;
  }

  #finish(): void {
    const resolve = this.#resolve;
    this.#resolve = null;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#wakeable) this.#pending = false;
    resolve?.();
  }
}
