import type { Database } from '@notify/migrations';
import { Kysely, PostgresDialect } from 'kysely';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMetrics } from './metrics.js';

describe('createMetrics (no database)', () => {
  it('renders the counters and histograms it was fed', async () => {
    const m = createMetrics({ processMetrics: false });
    m.observeAttempt({ channel: 'webhook', outcome: 'sent', latencySeconds: 0.042 });
    m.observeAttempt({ channel: 'email', outcome: 'suppressed' });
    m.observePublished(3);
    m.observeRelayError('publish');
    m.observeConsumerError('handler');
    m.observeLateness(0.2);
    m.observeRetryScheduled('retry.1s');
    m.observeRepaired(2);
    m.observeDeadLetter('invalid_message');
    m.observeDead('sms', 'exhausted');
    m.observeHttp({ method: 'POST', route: '/v1/notifications', status: 202 }, 0.01);
    m.observeEnqueueGroup(1, false);
    m.observeEnqueueGroup(12, true);
    const text = await m.render();
    expect(text).toContain('notify_attempts_total{outcome="sent",channel="webhook"} 1');
    expect(text).toContain('notify_attempts_total{outcome="suppressed",channel="email"} 1');
    expect(text).toContain('notify_provider_latency_seconds_bucket{le="0.05",channel="webhook",outcome="sent"} 1');
    expect(text).not.toContain('notify_provider_latency_seconds_count{channel="email"');
    expect(text).toContain('notify_relay_published_total 3');
    expect(text).toContain('notify_relay_errors_total{stage="publish"} 1');
    expect(text).toContain('notify_consumer_errors_total{phase="handler"} 1');
    expect(text).toContain('notify_dispatch_lateness_seconds_bucket{le="0.25"} 1');
    expect(text).toContain('notify_retries_scheduled_total{topic="retry.1s"} 1');
    expect(text).toContain('notify_repaired_total 2');
    expect(text).toContain('notify_dead_letters_total{reason="invalid_message"} 1');
    expect(text).toContain('notify_dead_total{channel="sms",reason="exhausted"} 1');
    expect(text).toContain('notify_http_requests_total{method="POST",route="/v1/notifications",status="202"} 1');
    expect(text).toContain('notify_api_enqueue_group_size_bucket{le="16"} 2');
    expect(text).toContain('notify_api_enqueue_group_size_bucket{le="8"} 1');
    expect(text).toContain('notify_api_enqueue_groups_isolated_total 1');
    expect(text).not.toContain('notify_notifications{');
  });
  it('keeps separate registries per instance', async () => {
    const a = createMetrics({ processMetrics: false });
    const b = createMetrics({ processMetrics: false });
    a.observePublished(1);
    expect(await b.render()).toContain('notify_relay_published_total 0');
  });
});

describe('createMetrics default process metrics', () => {
  it('use the standard names, without a prefix, so stock Node.js dashboards work', async () => {
    const text = await createMetrics().render();
    expect(text).toMatch(/^process_cpu_user_seconds_total /m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
    expect(text).not.toContain('notify_process_');
    expect(text).not.toContain('notify_nodejs_');
  });
});

describe('createMetrics readiness and consumer lag gauges', () => {
  it('reports each readiness check as 1 or 0 and the lag per topic, reading at most once per refresh', async () => {
    let now = 0;
    const clock = { now: () => new Date(now) };
    let kafkaUp = true;
    let lagReads = 0;
    const m = createMetrics({
      processMetrics: false,
      clock,
      refreshMs: 5_000,
      readiness: {
        database: async () => {},
        kafka: async () => {
          if (!kafkaUp) throw new Error('broker down');
        },
      },
      consumerLag: async () => {
        lagReads++;
        return [
          { topic: 'p.requests', lag: 12 },
          { topic: 'p.retry.1s', lag: 0 },
        ];
      },
    });
    let text = await m.render();
    expect(text).toContain('notify_ready{check="database"} 1');
    expect(text).toContain('notify_ready{check="kafka"} 1');
    expect(text).toContain('notify_kafka_consumer_lag_messages{topic="p.requests"} 12');
    expect(text).toContain('notify_kafka_consumer_lag_messages{topic="p.retry.1s"} 0');
    kafkaUp = false;
    now = 1_000; // within the refresh interval: the cached reading stands
    expect(await m.render()).toContain('notify_ready{check="kafka"} 1');
    expect(lagReads).toBe(1);
    now = 6_000;
    text = await m.render();
    expect(text).toContain('notify_ready{check="kafka"} 0');
    expect(text).toContain('notify_ready{check="database"} 1');
    expect(lagReads).toBe(2);
  });

  it('counts a failed lag read as a collect error and keeps serving the rest', async () => {
    const m = createMetrics({
      processMetrics: false,
      consumerLag: async () => {
        throw new Error('no coordinator');
      },
    });
    expect(await m.render()).toContain('notify_relay_published_total 0');
    // The error counter is rendered before the gauge collects, so the next scrape shows it.
    expect(await m.render()).toMatch(/^notify_metrics_collect_errors_total [1-9]/m);
  });
});

describe('createMetrics when what it reads hangs', () => {
  afterEach(() => {
    vi.useRealTimers();
  });
  const errorsIn = (text: string) => Number(/^notify_metrics_collect_errors_total (\d+)/m.exec(text)?.[1]);

  it('answers a scrape within 2 s when Kafka or PostgreSQL never answers, and counts one error per failed read', async () => {
    // A PostgreSQL that froze (not one that refuses): a connection that never comes.
    const db = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: { connect: () => new Promise(() => {}), end: async () => {} } }),
    });
    vi.useFakeTimers();
    const m = createMetrics({ processMetrics: false, db, consumerLag: () => new Promise(() => {}) });
    let text: string | undefined;
    const rendering = m.render().then((t) => (text = t));
    await vi.advanceTimersByTimeAsync(1_999);
    expect(text).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    await rendering;
    expect(text).not.toContain('notify_kafka_consumer_lag_messages{');
    expect(text).not.toContain('notify_notifications{');
    // The counter renders before the gauges collect: the next scrape shows this one's two failed
    // reads (the lag, and the one SQL snapshot that every SQL gauge shares), not one per gauge.
    vi.setSystemTime(Date.now() + 10_000);
    const next = m.render();
    await vi.advanceTimersByTimeAsync(2_000);
    expect(errorsIn(await next)).toBe(2);
  });
});
