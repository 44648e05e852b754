import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Problem } from '@notify/api';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { createTestKafka, type TestKafka } from '../../../test/support/kafka.js';
import { type NotifyServer, startNotifyProcess } from '../../../test/support/notify-process.js';

// The API's rate limits are token buckets in PostgreSQL, so two API processes draw from the same
// buckets: per key (NOTIFY_API_RATE_LIMIT) and per tenant (NOTIFY_API_TENANT_RATE_LIMIT). The
// refill here (1 per minute) is slow enough that the test sees only the bursts.

const KEY_A = 'nk_ratelimit_a_0123456789';
const KEY_B = 'nk_ratelimit_b_0123456789';

let t: TestDatabase;
let kafka: TestKafka;
const apis: NotifyServer[] = [];

beforeAll(async () => {
  [t, kafka] = await Promise.all([createTestDatabase(), createTestKafka()]);
  const env = {
    DATABASE_URL: t.url,
    KAFKA_BROKERS: kafka.brokers.join(','),
    NOTIFY_TOPIC_PREFIX: kafka.prefix,
    NOTIFY_TOPIC_PARTITIONS: '1',
    PORT: '0',
    NOTIFY_API_KEYS: `acme:${KEY_A},acme:${KEY_B}`,
    NOTIFY_API_RATE_LIMIT: '1/m,burst=4',
    NOTIFY_API_TENANT_RATE_LIMIT: '1/m,burst=6',
  };
  // One after the other: both seed the same keys.
  apis.push(await startNotifyProcess(['--roles', 'api'], env));
  apis.push(await startNotifyProcess(['--roles', 'api'], env));
}, 120_000);

afterAll(async () => {
  await Promise.all(apis.map((a) => a.stop()));
  await kafka?.close();
  await t?.close();
});

const list = (i: number, key: string) => fetch(`${apis[i % 2]!.url}/v1/notifications`, { headers: { authorization: `Bearer ${key}` } });

describe('API rate limits across two API processes', () => {
  it('share one bucket per key and one per tenant; a refusal is a 429 problem with Retry-After and RateLimit headers', async () => {
    // Key A, alternating between the processes: its 4-token bucket is shared.
    const a: number[] = [];
    for (let i = 0; i < 6; i++) a.push((await list(i, KEY_A)).status);
    expect(a).toEqual([200, 200, 200, 200, 429, 429]);

    // Key B of the same tenant: its own key bucket is full, but the tenant has 2 of 6 tokens left.
    const b: Response[] = [];
    for (let i = 0; i < 3; i++) b.push(await list(i, KEY_B));
    expect(b.map((r) => r.status)).toEqual([200, 200, 429]);
    expect(b[0]!.headers.get('ratelimit-limit')).toBe('6');
    expect(b[0]!.headers.get('ratelimit-remaining')).toBe('1');

    const refused = b[2]!;
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    const body = Problem.parse(await refused.json());
    expect(body).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(body.detail).toContain('tenant');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(refused.headers.get('ratelimit-limit')).toBe('6');
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    expect(refused.headers.get('ratelimit-reset')).toBe(refused.headers.get('retry-after'));
    expect(refused.headers.get('ratelimit-policy')).toBe('6;w=360');
  });
});
