import { type Logger, errorSummary } from '@notify/runtime';
import type { Consumer } from 'kafkajs';

/** Options of `restartAfterFatalCrash`. */
export interface RestartAfterFatalCrashOptions {
  /** Runs the consumer again (`consumer.run` with the owner's handlers); subscriptions are kept. */
  readonly run: () => Promise<void>;
  /** True once the owner stops: no restart is scheduled or attempted after that. */
  readonly stopped: () => boolean;
  readonly logger: Logger;
  /** First wait before a restart, doubled after each failed one up to `maxDelayMs`. Default 1 s. */
  readonly minDelayMs?: number;
  /** Default 30 s. */
  readonly maxDelayMs?: number;
}

/**
 * Restarts a consumer that kafkajs gave up on. kafkajs restarts a crashed consumer only when the
 * error is retriable; after any other crash it disconnects the consumer and leaves it so, while
 * the process lives on and its partitions are never read again. Seen in the chaos suite's
 * five-minute Kafka outage: the dispatcher's consumer crashed with "Failed to find group
 * coordinator" (`restart: false`), and after the broker came back the relay published every
 * queued row while no delivery started. This connects and runs it again, waiting `minDelayMs`
 * doubled after each failed try (the broker may still be down) up to `maxDelayMs`, until it runs
 * or the owner stops. A restarted consumer rejoins its group like after a rebalance.
 */
export function restartAfterFatalCrash(consumer: Consumer, options: RestartAfterFatalCrashOptions): void {
  const minDelayMs = options.minDelayMs ?? 1_000;
  const maxDelayMs = options.maxDelayMs ?? 30_000;
  let failures = 0;
  let pending = false;

  const attempt = async (): Promise<void> => {
    pending = false;
    if (options.stopped()) return;
    try {
      await consumer.connect();
      await options.run();
      failures = 0;
      options.logger.warn({ failures: 0 }, 'kafka consumer restarted after a crash kafkajs does not restart from');
    } catch (err) {
      failures++;
      options.logger.warn({ err: errorSummary(err), failures }, 'restarting the kafka consumer failed; trying again');
      await consumer.disconnect().catch(() => undefined);
      schedule();
    }
  };

  function schedule(): void {
    if (pending || options.stopped()) return;
    pending = true;
    const delay = Math.min(maxDelayMs, minDelayMs * 2 ** failures);
    setTimeout(() => void attempt(), delay).unref();
  }

  consumer.on(consumer.events.CRASH, (e) => {
    if (!e.payload.restart) schedule();
  });
}
