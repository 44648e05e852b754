import type { SqlExecutor } from '@notify/outbox';
import type { Logger } from '@notify/runtime';
import type { Config } from './config.js';
import { notifySettingsRead } from './sql/notify-settings-read.js';
import type { NotifySettingsWriteParams } from './sql/notify-settings-write.js';

/** The settings of `notify_settings`, as `notify start` writes them. */
type StoredSettings = NotifySettingsWriteParams;

/** The settings `notify start` with `config` writes to `notify_settings`. */
export function storedSettingsOf(config: Config): StoredSettings {
  return { maxAttempts: config.retry.maxAttempts, defaultTtlMs: config.retry.defaultTtlMs, events: config.events };
}

const VARIABLES: Readonly<Record<keyof StoredSettings, string>> = {
  maxAttempts: 'NOTIFY_MAX_ATTEMPTS',
  defaultTtlMs: 'NOTIFY_DEFAULT_TTL_MS',
  events: 'NOTIFY_EVENTS',
};

/**
 * What writing `next` over `stored` changes, one `VARIABLE old → new` per field (empty when
 * nothing changes, or nothing was stored yet).
 */
export function settingsChanges(stored: StoredSettings | undefined, next: StoredSettings): string[] {
  if (stored === undefined) return [];
  return (Object.keys(VARIABLES) as (keyof StoredSettings)[])
    .filter((field) => stored[field] !== next[field])
    .map((field) => `${VARIABLES[field]} ${stored[field]} → ${next[field]}`);
}

/** The API's retry settings, following `notify_settings` (`followStoredRetry`). */
export interface StoredRetry {
  /** The values last read: read them at each use, not once. */
  readonly retry: { readonly maxAttempts: number; readonly defaultTtlMs: number };
  stop(): void;
}

/**
 * Keeps the API's attempt budget and default expiry equal to `notify_settings` (where
 * `enqueue()` and `notify_enqueue` read them), re-reading it every `refreshMs`: the last
 * `notify start` anywhere wins, so another process's start changes them for this one too,
 * within `refreshMs`. A failed read keeps the values it has.
 */
export function followStoredRetry(
  db: SqlExecutor,
  initial: StoredSettings,
  { refreshMs, logger }: { readonly refreshMs: number; readonly logger: Logger },
): StoredRetry {
  let current = { maxAttempts: initial.maxAttempts, defaultTtlMs: initial.defaultTtlMs };
  let timer: NodeJS.Timeout | undefined;
  const refresh = async () => {
    try {
      const stored = await notifySettingsRead(db);
      if (stored && (stored.maxAttempts !== current.maxAttempts || stored.defaultTtlMs !== current.defaultTtlMs)) {
        logger.info(
          { changes: settingsChanges({ ...stored, ...current }, stored) },
          'notify_settings changed by another notify start: the API follows it',
        );
        current = { maxAttempts: stored.maxAttempts, defaultTtlMs: stored.defaultTtlMs };
      }
    } catch (err) {
      logger.debug({ err: (err as Error).message }, 'reading notify_settings failed; keeping the values read before');
    }
    if (timer) schedule();
  };
  const schedule = () => {
    timer = setTimeout(() => void refresh(), refreshMs);
    timer.unref();
  };
  schedule();
  return {
    retry: {
      get maxAttempts() {
        return current.maxAttempts;
      },
      get defaultTtlMs() {
        return current.defaultTtlMs;
      },
    },
    stop() {
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
