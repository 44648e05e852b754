import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '@notify/cli';
import { type CallbackService, createCallbackService } from '@notify/dispatcher';
import { fromKysely } from '@notify/outbox';
import { type HttpReceiver, startHttpReceiver } from '@notify/providers/testing';
import { silentLogger, systemClock } from '@notify/runtime';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { createTestKafka, type TestKafka } from '../../../test/support/kafka.js';

// Status callbacks in /metrics (docs/callbacks.md): notify_callback_deliveries_total{outcome} counts
// what the sender recorded, and notify_callback_pending is what waits in callback_deliveries. One
// round of the real sender against two real receivers: one answers 200, one 503.

let t: TestDatabase;
let kafka: TestKafka;
let ok: HttpReceiver;
let busy: HttpReceiver;
let service: CallbackService | undefined;

beforeAll(async () => {
  [t, kafka, ok, busy] = await Promise.all([
    createTestDatabase(),
    createTestKafka(),
    startHttpReceiver(),
    startHttpReceiver({ defaultResponse: { status: 503 } }),
  ]);
});

afterAll(async () => {
  service?.sender.close();
  await Promise.all([ok?.close(), busy?.close()]);
  await kafka?.close();
  await t?.close();
});

const render = (m: ReturnType<typeof createMetrics>) => m.render();

describe('callback metrics', () => {
  it('count delivered, retried and failed callbacks, and gauge the pending ones', async () => {
    for (const [tenant, url] of [
      ['acme', `${ok.url}/cb`],
      ['beta', `${busy.url}/cb`],
    ] as const) {
      await t.pool.query(
        `INSERT INTO callback_endpoints (tenant_id, url, events, created_at, updated_at) VALUES ($1, $2, $3, now(), now())`,
        [tenant, url, ['notification.sent']],
      );
    }
    // acme: two to deliver; beta: one its receiver refuses with 503 (retried); gamma: no endpoint (failed at once).
    for (const [tenant, event] of [
      ['acme', 'e1'],
      ['acme', 'e2'],
      ['beta', 'e3'],
      ['gamma', 'e4'],
    ] as const) {
      await t.pool.query(
        `INSERT INTO callback_deliveries (tenant_id, event_id, notification_id, event_type, payload, next_attempt_at, created_at, updated_at)
         VALUES ($1, $2, 'ntf_x', 'notification.sent', '{}', now(), now(), now())`,
        [tenant, event],
      );
    }
    const metrics = createMetrics({ db: t.db, processMetrics: false, refreshMs: 0 });
    expect(await render(metrics)).toContain('notify_callback_pending 4');

    service = createCallbackService(
      {
        topicPrefix: kafka.prefix,
        groupId: `${kafka.prefix}.callbacks`,
        retry: { maxAttempts: 3, baseDelayMs: 60_000, maxDelayMs: 60_000, jitter: 0 },
        sendTimeoutMs: 5_000,
        allowCidrs: ['127.0.0.1/32'],
        signingSecret: `whsec_${randomBytes(24).toString('base64')}`,
      },
      {
        db: fromKysely(t.db),
        kafka: kafka.kafka,
        clock: systemClock,
        logger: silentLogger,
        observe: (outcome, count) => metrics.observeCallback(outcome, count),
      },
    );
    expect(await service.sender.runOnce()).toBe(4);

    const text = await render(metrics);
    expect(text).toContain('notify_callback_deliveries_total{outcome="delivered"} 2');
    expect(text).toContain('notify_callback_deliveries_total{outcome="retried"} 1');
    expect(text).toContain('notify_callback_deliveries_total{outcome="failed"} 1');
    expect(text).toContain('notify_callback_pending 1'); // beta's retry, due in a minute
    expect(ok.requests).toHaveLength(2);
    expect(busy.requests).toHaveLength(1);
  });
});
