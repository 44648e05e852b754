import type { Server } from 'node:net';
import { type Logger, createBatchTimer } from '@notify/runtime';

/** How often, at most, a capped server logs the connections it dropped. */
const DROP_WARNING_INTERVAL_MS = 60_000;

/** Options of `capConnections`. */
export interface ConnectionCapOptions {
  /** Open connections the server keeps at most; the next one is closed as soon as it is accepted. 0: no cap. */
  readonly maxConnections: number;
  /** The variable that sets it, named in the warning. */
  readonly variable: string;
  /** At most one warning per this many ms (default 60 000). */
  readonly warnEveryMs?: number;
}

/** What `capConnections` reports to. */
export interface ConnectionCapDeps {
  readonly logger: Logger;
  /** Called once per dropped connection (the metric). */
  readonly onDrop: () => void;
}

/**
 * Caps the open connections of `server` (Node's `maxConnections`: past it, Node closes each new
 * socket as soon as it accepts it, before any byte is read, and emits `drop`). Each drop is
 * reported to `onDrop`; the logger gets a warning at the first drop and then at most one per
 * `warnEveryMs`, with how many were dropped since the last one (never who connected or what they
 * sent: a flood of connections must not become a flood of log lines). Nothing is set when
 * `maxConnections` is 0.
 */
export function capConnections(server: Server, options: ConnectionCapOptions, deps: ConnectionCapDeps): void {
  if (options.maxConnections === 0) return;
  const warnEveryMs = options.warnEveryMs ?? DROP_WARNING_INTERVAL_MS;
  let unreported = 0;
  const report = () => {
    deps.logger.warn(
      { dropped: unreported, max_connections: options.maxConnections },
      `dropped ${unreported} new connection${unreported === 1 ? '' : 's'} at the cap of ${options.variable}=${options.maxConnections} open connections`,
    );
    unreported = 0;
  };
  // The first drop is told at once; later ones wait for the end of the window, which then starts again while drops go on.
  const window = createBatchTimer(() => {
    if (unreported === 0) return;
    report();
    window.schedule();
  }, warnEveryMs);
  server.maxConnections = options.maxConnections;
  server.on('drop', () => {
    deps.onDrop();
    unreported++;
    if (window.scheduled) return;
    report();
    window.schedule();
  });
  server.once('close', () => window.cancel());
}
