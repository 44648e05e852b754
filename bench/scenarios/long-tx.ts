import pg from 'pg';
import { createEnqueuer, warmUp, webhookIntent } from '../lib/load.js';
import { type Receiver, startReceiver } from '../lib/receiver.js';
import { startNotifyService } from '../lib/service.js';
import { latencyAtRate } from './end-to-end.js';
import type { BenchContext, Scenario } from './types.js';

const RATE = 50;

/** RATE/s for `windowMs` on the running service; `afterOffer` runs once offering is over. */
async function window(url: string, receiver: Receiver, windowMs: number, afterOffer: () => Promise<void>) {
  const enqueuer = createEnqueuer(url, 8);
  try {
    await enqueuer.warm(webhookIntent(receiver.url, 0));
    return await latencyAtRate(receiver, RATE, windowMs, (n) => enqueuer.enqueueOne(webhookIntent(receiver.url, n)), {
      maxInFlight: 32,
      waitMs: 60_000,
      afterOffer,
    });
  } finally {
    await enqueuer.close();
  }
}

/**
 * A long write transaction in another database of the same server (it holds an xid, so it holds
 * back the server-wide xmin that the relay's snapshot rule waits for), open for the whole window
 * while ordinary notifications are enqueued at 50/s; against a window of the same load without it.
 * The figure is the p99 commit → delivery the long transaction adds; lost counts notifications
 * that never arrived (nothing may be skipped).
 */
export const longTxScenario: Scenario = {
  name: 'long-tx',
  description: 'added commit → delivery latency while a 60 s write transaction is open in another database of the server',
  needsKafka: true,
  async run(ctx: BenchContext) {
    const holdMs = ctx.quick ? 10_000 : 60_000;
    const baselineMs = ctx.quick ? 5_000 : 10_000;
    const db = await ctx.stack.freshDatabase('long_tx');
    const other = await ctx.stack.freshDatabase('long_tx_other');
    const receiver = await startReceiver();
    try {
      const service = await startNotifyService({
        name: 'long-tx-notify',
        databaseUrl: db.url,
        brokers: await ctx.stack.kafkaBrokers(),
        topicPrefix: ctx.stack.topicPrefix('long-tx'),
        env: { ...ctx.serviceEnv },
        cpuProfDir: ctx.cpuProfDir,
      });
      try {
        await warmUp(db.url, receiver.url, () => receiver.delivered(), { rate: RATE, durationMs: 3_000 });
        const base = await window(db.url, receiver, baselineMs, async () => {});
        ctx.log(
          `long-tx: baseline p99 ${Math.round(base.latencyMs.p99)} ms; opening a ${holdMs / 1000} s write transaction in ${other.name}`,
        );
        const holder = new pg.Client({ connectionString: other.url, application_name: 'notify-bench-long-tx' });
        holder.on('error', () => {});
        await holder.connect();
        let held;
        try {
          await holder.query('BEGIN');
          await holder.query('CREATE TABLE held (x int)');
          await holder.query('INSERT INTO held VALUES (1)');
          held = await window(db.url, receiver, holdMs, async () => {
            await holder.query('COMMIT');
          });
        } finally {
          await holder.end().catch(() => {});
        }
        const added = held.latencyMs.p99 - base.latencyMs.p99;
        ctx.log(
          `long-tx: p99 with the transaction open ${Math.round(held.latencyMs.p99)} ms (+${Math.round(added)} ms), lost ${held.undelivered}`,
        );
        const peak = await service.child.stop();
        return {
          figures: [
            {
              id: 'added.p99',
              label: `added commit → delivery p99 while a ${holdMs / 1000} s write transaction is open elsewhere`,
              value: added,
              unit: 'ms',
              targets: [{ on: 'value', op: '<=', value: 1_000 }],
              note: `p99 ${Math.round(held.latencyMs.p99)} ms with it, ${Math.round(base.latencyMs.p99)} ms without, at ${RATE}/s`,
            },
            {
              id: 'p50.held',
              label: 'commit → delivery p50 while it is open',
              value: held.latencyMs.p50,
              unit: 'ms',
              baseline: { label: 'without', value: base.latencyMs.p50 },
            },
            {
              id: 'lost',
              label: 'notifications never delivered (long-tx window)',
              value: held.undelivered + base.undelivered,
              unit: '',
              targets: [{ on: 'value', op: '<=', value: 0 }],
            },
          ],
          peakRss: { 'notify start (all roles)': peak },
          details: { rate: RATE, holdMs, baseline: base, held },
        };
      } finally {
        await service.child.stop();
      }
    } finally {
      await receiver.close();
      await other.drop();
      await db.drop();
    }
  },
};
