import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '@notify/cli';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';

// notify_endpoint_circuits_open is what the alerts (docs/observability.md) watch: the number of
// endpoints whose circuit is open now, per channel, read from the shared endpoints table.

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

describe('endpoint gauges', () => {
  it('count the endpoints whose circuit is open, and the disabled ones, per channel (0 for the others)', async () => {
    await t.pool.query(
      `INSERT INTO endpoints (id, tenant_id, channel, origin, state, probe_at, disabled_at, disabled_by) VALUES
         ('ep_1', 'a', 'webhook', 'https://a.example:443', 'open', now(), NULL, NULL),
         ('ep_2', 'b', 'webhook', 'https://a.example:443', 'open', now(), NULL, NULL),
         ('ep_3', 'a', 'sms', 'https://gw.example:443', 'open', now(), NULL, NULL),
         ('ep_4', 'a', 'webhook', 'https://b.example:443', 'ok', NULL, NULL, NULL),
         ('ep_5', 'a', 'email', 'smtp://mx.example:25', 'disabled', NULL, now(), 'auto')`,
    );
    const text = await createMetrics({ db: t.db, processMetrics: false }).render();
    expect(text).toContain('notify_endpoint_circuits_open{channel="webhook"} 2');
    expect(text).toContain('notify_endpoint_circuits_open{channel="sms"} 1');
    expect(text).toContain('notify_endpoint_circuits_open{channel="email"} 0');
    expect(text).toContain('notify_endpoints_disabled{channel="email"} 1');
    expect(text).toContain('notify_endpoints_disabled{channel="webhook"} 0');
  });
});
