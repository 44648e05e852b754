import { enqueue, enqueueMany, fromPgClient, type NotificationIntent } from '@notify/outbox';
import type { Figure } from '../lib/report.js';
import { median, pairedRatio } from '../lib/stats.js';
import type { Scenario } from './types.js';
import { benchPool } from '../lib/pool.js';

const CLIENTS = 4;
const BATCH = 100;

type Mode = 'single' | 'batch';

/**
 * Batch enqueue (issue 15): rows/s queued by `enqueueMany` (100 intents per transaction, one
 * round trip) against `enqueue` (one intent per transaction), 4 clients each, same database and
 * pool, rounds alternating; the ratio is the median of per-round ratios. In-process: both sides
 * pay the same client cost.
 */
export const batchEnqueueScenario: Scenario = {
  name: 'batch-enqueue',
  description: `enqueueMany (${BATCH} per transaction) vs enqueue (1 per transaction), rows/s, ${CLIENTS} clients`,
  needsKafka: false,
  async run(ctx) {
    const db = await ctx.stack.freshDatabase('batch_enqueue');
    const pool = benchPool(db.url, CLIENTS);
    try {
      const rounds = ctx.quick ? 2 : 3;
      const roundMs = ctx.quick ? 700 : 3_000;
      let n = 0;
      const intent = (): NotificationIntent => ({
        tenant_id: 'bench',
        channel: 'email',
        to: `user${n++ % 1000}@example.com`,
        subject: 'Hi',
        body: 'Welcome',
      });
      const runRound = async (mode: Mode): Promise<number> => {
        const deadline = Date.now() + roundMs;
        let rows = 0;
        const started = Date.now();
        await Promise.all(
          Array.from({ length: CLIENTS }, async () => {
            const client = await pool.connect();
            try {
              const tx = fromPgClient(client);
              while (Date.now() < deadline) {
                await client.query('BEGIN');
                if (mode === 'single') await enqueue(tx, intent());
                else await enqueueMany(tx, Array.from({ length: BATCH }, intent));
                await client.query('COMMIT');
                rows += mode === 'single' ? 1 : BATCH;
              }
            } finally {
              client.release();
            }
          }),
        );
        return rows / ((Date.now() - started) / 1000);
      };
      await runRound('single'); // warm-up: plans, connections
      await runRound('batch');
      const rates: Record<Mode, number[]> = { single: [], batch: [] };
      for (let r = 0; r < rounds; r++) {
        for (const mode of r % 2 === 0 ? (['single', 'batch'] as const) : (['batch', 'single'] as const))
          rates[mode].push(await runRound(mode));
      }
      ctx.log(
        `batch-enqueue: single ${rates.single.map(Math.round).join(', ')} rows/s; batch ${rates.batch.map(Math.round).join(', ')} rows/s`,
      );
      const figures: Figure[] = [
        {
          id: 'batch.rows',
          label: `enqueueMany rows/s (${BATCH} per tx, ${CLIENTS} clients)`,
          value: median(rates.batch),
          unit: '/s',
          baseline: { label: 'enqueue, 1 per tx', value: median(rates.single) },
          ratio: pairedRatio(rates.batch, rates.single),
        },
      ];
      return { figures, details: { rounds, roundMs, clients: CLIENTS, batch: BATCH, rates } };
    } finally {
      await pool.end();
      await db.drop();
    }
  },
};
