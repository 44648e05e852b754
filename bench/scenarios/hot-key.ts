import { prefillNotifications, hotKeyIntent } from '../lib/load.js';
import { startReceiver } from '../lib/receiver.js';
import { startNotifyService } from '../lib/service.js';
import type { BenchContext, Scenario } from './types.js';
import { measureDrain } from './end-to-end.js';
import { outOfOrder } from '../lib/stats.js';
import { benchPool } from '../lib/pool.js';

/**
 * One recipient, one key: a backlog of notifications to the same URL, queued in one connection
 * (so enqueue order is known), drained through `notify start`. Deliveries of one key start in
 * order, so this measures one key's chain, not the system's width.
 */
export const hotKeyScenario: Scenario = {
  name: 'hot-key',
  description: 'one recipient (one key): 2,000 queued notifications to one URL drained in order through notify start',
  needsKafka: true,
  async run(ctx: BenchContext) {
    const count = ctx.quick ? 500 : 2_000;
    const db = await ctx.stack.freshDatabase('hot_key');
    const receiver = await startReceiver();
    const pool = benchPool(db.url, 2);
    try {
      const ids = await prefillNotifications(db.url, count, receiver.url, { clients: 1, intent: hotKeyIntent });
      receiver.reset();
      const service = await startNotifyService({
        name: 'hot-key-notify',
        databaseUrl: db.url,
        brokers: await ctx.stack.kafkaBrokers(),
        topicPrefix: ctx.stack.topicPrefix('hot-key'),
        env: { ...ctx.serviceEnv },
        cpuProfDir: ctx.cpuProfDir,
      });
      try {
        const drain = await measureDrain({
          pool,
          countSql: "SELECT count(*)::int AS n FROM notifications WHERE state = 'sent'",
          target: count,
          receiver,
          parts: { service: service.child.pid, database: db.name, admin: pool, kafka: true },
          timeoutMs: Math.max(120_000, count * 20),
        });
        const late = outOfOrder(ids, receiver.firstDelivered);
        ctx.log(`hot-key: ${count} in ${Math.round(drain.drainMs)} ms (${Math.round(drain.perSec)}/s), ${late} out of order`);
        const peak = await service.child.stop();
        return {
          figures: [
            {
              id: 'rate',
              label: `one recipient, ${count} notifications drained in order`,
              value: drain.perSec,
              unit: '/s',
              targets: [{ on: 'value', op: '>=', value: 500 }],
              ...(ctx.quick ? { note: `quick mode: ${count} notifications` } : {}),
            },
            {
              id: 'order',
              label: 'one recipient: first arrivals out of enqueue order',
              value: late,
              unit: '',
              targets: [{ on: 'value', op: '<=', value: 0 }],
            },
            { id: 'cpu.service', label: 'one recipient: CPU ms per notification, service process', value: drain.cpu.serviceMs, unit: 'ms' },
          ],
          peakRss: { 'notify start (all roles)': peak },
          details: { count, drain },
        };
      } finally {
        await service.child.stop();
      }
    } finally {
      await pool.end();
      await receiver.close();
      await db.drop();
    }
  },
};
