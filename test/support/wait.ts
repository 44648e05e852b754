/**
 * Waits until `condition` returns a truthy value (which it returns), polling every `intervalMs`.
 * The only way tests wait: no bare sleeps. Fails with `message` and the last error after `timeoutMs`.
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 25, message = 'condition' }: { timeoutMs?: number; intervalMs?: number; message?: string } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${message}${lastError ? `: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)}` : ''}`,
        { cause: lastError },
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
