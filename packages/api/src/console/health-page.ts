import { Hono } from 'hono';
import { html } from 'hono/html';
import { deliveryRate } from '../sql/delivery-rate.js';
import { type ConsoleDeps, type ConsoleEnv, page } from './context.js';
import { endpointsSection } from './endpoints.js';
import { type Bar, barChart } from './pipeline.js';
import { table } from './layout.js';

const OUTCOMES = ['sent', 'transient', 'permanent', 'expired', 'suppressed'] as const;

/** The caption of the table with the delivery charts' figures, which their descriptions name. */
const FIGURES = 'Delivery attempts and notifications ending dead per minute, last hour (minutes with none left out)';

/**
 * Pipeline health: the tenant's endpoints that are not delivering (open circuit, disabled), outbox
 * lag, consumer lag, deliveries per minute by outcome and the dead rate over the last hour.
 */
export function healthPages(deps: ConsoleDeps): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();
  app.get('/health', async (c) => {
    const s = c.get('session');
    const now = deps.clock.now();
    const to = new Date(Math.floor(now.getTime() / 60_000) * 60_000 + 60_000);
    const from = new Date(to.getTime() - 60 * 60_000);
    const [rate, outbox, consumer, endpoints] = await Promise.all([
      deliveryRate(deps.exec, { tenantId: s.tenantId, from, to }),
      deps.pipeline ? deps.pipeline.outboxLag().catch(() => undefined) : Promise.resolve(undefined),
      deps.pipeline ? deps.pipeline.consumerLag().catch(() => undefined) : Promise.resolve(undefined),
      endpointsSection(deps, c),
    ]);
    const minutes = Array.from({ length: 60 }, (_, i) => new Date(from.getTime() + i * 60_000));
    const byMinute = new Map<number, { outcome: Record<string, number>; sent: number; dead: number }>();
    for (const m of minutes) byMinute.set(m.getTime(), { outcome: {}, sent: 0, dead: 0 });
    for (const r of rate) {
      const slot = byMinute.get(new Date(r.minute).getTime());
      if (!slot) continue;
      slot.outcome[r.outcome] = (slot.outcome[r.outcome] ?? 0) + r.count;
      if (r.final_state === 'sent') slot.sent += r.count;
      if (r.final_state === 'dead') slot.dead += r.count;
    }
    const label = (d: Date) => d.toISOString().slice(11, 16);
    const deliveryBars: Bar[] = minutes.map((m) => ({
      label: label(m),
      segments: OUTCOMES.map((o) => ({ key: o, value: byMinute.get(m.getTime())!.outcome[o] ?? 0 })),
    }));
    const deadBars: Bar[] = minutes.map((m) => ({ label: label(m), segments: [{ key: 'dead', value: byMinute.get(m.getTime())!.dead }] }));
    const lagging = consumer?.filter((t) => t.lag > 0) ?? [];
    const totals = [...byMinute.values()].reduce((a, v) => ({ sent: a.sent + v.sent, dead: a.dead + v.dead }), { sent: 0, dead: 0 });
    const deadRate = totals.sent + totals.dead > 0 ? (100 * totals.dead) / (totals.sent + totals.dead) : 0;
    const attemptsTotal = deliveryBars.reduce((a, b) => a + b.segments.reduce((x, y) => x + y.value, 0), 0);
    return page(
      c,
      { title: 'Pipeline health', active: '/console/health' },
      html`${endpoints}
        <h2>Outbox</h2>
        ${
          outbox
            ? html`<p>
                  Oldest unpublished row: <strong id="outbox-lag">${((outbox.oldestAgeMs ?? 0) / 1000).toFixed(1)} s</strong>; rows waiting:
                  <strong>${outbox.unpublished}</strong>. (Metrics: <code>notify_outbox_lag_seconds</code>,
                  <code>notify_outbox_unpublished</code>; the whole service, all tenants.)
                </p>
                ${barChart({ id: 'outbox-chart', title: 'Outbox lag', bars: [{ label: 'oldest unpublished', segments: [{ key: 'lag', value: Math.round((outbox.oldestAgeMs ?? 0) / 1000) }] }], keys: ['lag'], unit: 'seconds' })}`
            : html`<p class="muted">Not available from this process.</p>`
        }
        <h2>Kafka consumer lag</h2>
        ${
          consumer
            ? html`${
                  lagging.length > 0
                    ? barChart({
                        id: 'consumer-chart',
                        table: 'Consumer lag per topic',
                        title: 'Consumer lag per topic (topics with lag)',
                        bars: lagging.map((t) => ({ label: t.topic, segments: [{ key: 'lag', value: t.lag }] })),
                        keys: ['lag'],
                        unit: 'messages',
                      })
                    : html`<p>No topic has lag.</p>`
                }
                <p class="muted">
                  A delay topic (<code>retry.*</code>) holds retries until they are due: messages waiting there count as lag by design.
                </p>
                ${table(
                  'consumer-lag',
                  'Consumer lag per topic',
                  ['Topic', 'Lag (messages)'],
                  consumer.map(
                    (t) =>
                      html`<tr>
                        <th scope="row">${t.topic}</th>
                        <td>${t.lag}</td>
                      </tr>`,
                  ),
                )}`
            : html`<p class="muted">Not available from this process.</p>`
        }
        <h2>Deliveries, last hour</h2>
        <p>
          ${attemptsTotal} attempts; dead rate <strong id="dead-rate">${deadRate.toFixed(1)} %</strong> (${totals.dead} of
          ${totals.sent + totals.dead} notifications that ended in the hour). (Metrics: <code>notify_attempts_total{outcome}</code>,
          <code>notify_dead_total</code>.)
        </p>
        ${barChart({ id: 'deliveries-chart', table: FIGURES, title: 'Delivery attempts per minute by outcome', bars: deliveryBars, keys: OUTCOMES, unit: 'attempts per minute, UTC' })}
        ${barChart({ id: 'dead-chart', table: FIGURES, title: 'Notifications ending dead per minute', bars: deadBars, keys: ['dead'], unit: 'per minute, UTC' })}
        <details>
          <summary>The figures as a table</summary>
          ${table(
            'deliveries',
            FIGURES,
            ['Minute (UTC)', ...OUTCOMES, 'ended dead'],
            deliveryBars
              .filter((b, i) => b.segments.some((x) => x.value > 0) || deadBars[i]!.segments[0]!.value > 0)
              .map(
                (b) =>
                  html`<tr>
                    <th scope="row">${b.label}</th>
                    ${b.segments.map((x) => html`<td>${x.value}</td>`)}
                    <td>${deadBars[deliveryBars.indexOf(b)]!.segments[0]!.value}</td>
                  </tr>`,
              ),
          )}
        </details>`,
    );
  });
  return app;
}
