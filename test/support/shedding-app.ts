import { createApp, noMetrics } from '@notify/api';

/** A notification that does not exist: a GET of it answers 404, unless the app sheds the request. */
export const UNKNOWN_NOTIFICATION = '/v1/notifications/ntf_01JZZZZZZZZZZZZZZZZZZZZZZZ';

type AppDeps = Parameters<typeof createApp>[0];

/**
 * The API app with the given shedding bounds, as the load-shedding tests build it: `reasons`
 * collects the reason of every request it sheds (`observeShed`), in order.
 */
export function createSheddingApp(db: AppDeps['db'], bounds: Pick<AppDeps, 'maxInFlight' | 'maxEventLoopDelayMs'>) {
  const reasons: string[] = [];
  const app = createApp({
    db,
    config: { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 } },
    ...bounds,
    metrics: { ...noMetrics, observeShed: (reason) => reasons.push(reason), render: async () => '', contentType: 'text/plain' },
  });
  return { app, reasons };
}
