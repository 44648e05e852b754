/**
 * `promise`, or a rejection with `onTimeout()` when it has not settled after `ms`. The timer is
 * cleared either way; `promise` itself keeps running (pass an AbortSignal to the work to stop it).
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(onTimeout()), Math.max(0, ms));
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Waits for `promise` to settle (fulfilled or rejected alike) for at most `ms`: true when it did,
 * false when the time ran out first. For bounded shutdowns: "finish what is running, but not forever".
 */
export async function settlesWithin(promise: Promise<unknown> | null | undefined, ms: number): Promise<boolean> {
  if (!promise) return true;
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, ms)))),
  ]);
  clearTimeout(timer);
  return settled;
}

/** Resolves after `ms`; an unref'd timer, so it never keeps the process alive on its own. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)).unref());
}
