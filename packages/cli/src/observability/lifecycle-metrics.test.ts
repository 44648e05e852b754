import { describe, expect, it } from 'vitest';
import { watchDispatcher, watchRelay } from './lifecycle-metrics.js';
import { createMetrics } from './metrics.js';

// A minimal typed emitter, standing in for the relay's and the dispatcher's (pure unit test).
function emitter() {
  const listeners = new Map<string, Set<(p: any) => void>>();
  return {
    on(event: string, listener: (p: any) => void) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event)!.add(listener);
      return () => listeners.get(event)!.delete(listener);
    },
    emit(event: string, payload: unknown) {
      for (const l of listeners.get(event) ?? []) l(payload);
    },
    count: () => [...listeners.values()].reduce((n, s) => n + s.size, 0),
  };
}

describe('lifecycle metrics', () => {
  it('counts relay publishes and errors by stage', async () => {
    const m = createMetrics({ processMetrics: false });
    const relay = emitter();
    const off = watchRelay(m, relay);
    relay.emit('published', { count: 5, durationMs: 3, publishMs: 2, firstId: '1', lastId: '5' });
    relay.emit('publishError', { error: new Error('x'), stage: 'publish', attempt: 1, retryInMs: 100 });
    relay.emit('error', { error: new Error('x'), stage: 'wakeup' });
    const text = await m.render();
    expect(text).toContain('notify_relay_published_total 5');
    expect(text).toContain('notify_relay_errors_total{stage="publish"} 1');
    expect(text).toContain('notify_relay_errors_total{stage="wakeup"} 1');
    off();
    expect(relay.count()).toBe(0);
  });

  it('counts attempts, provider latency, dead notifications and dead letters from dispatcher events', async () => {
    const m = createMetrics({ processMetrics: false });
    const d = emitter();
    const off = watchDispatcher(m, d);
    d.emit('attempt', {
      notificationId: 'n',
      channel: 'webhook',
      attempt: 1,
      outcome: 'transient',
      durationMs: 120,
      providerStatus: '503',
    });
    d.emit('attempt', { notificationId: 'n', channel: 'webhook', attempt: 2, outcome: 'sent', durationMs: 30, providerStatus: '200' });
    d.emit('attempt', { notificationId: 'm', channel: 'email', attempt: 1, outcome: 'suppressed', durationMs: 0, providerStatus: null });
    d.emit('stateChanged', { notificationId: 'm', channel: 'email', from: 'queued', to: 'dead', deadReason: 'suppressed', attempts: 1 });
    d.emit('stateChanged', { notificationId: 'n', channel: 'webhook', from: 'queued', to: 'sent', deadReason: null, attempts: 2 });
    d.emit('deadLettered', { code: 'bad_json', reason: 'value is not valid JSON', topic: 'p.requests', partition: 0, offset: '7' });
    d.emit('consumerError', { phase: 'commit', error: new Error('x') });
    d.emit('dispatched', { topic: 'p.requests', notificationId: 'n', attempt: 1, latenessMs: 40 });
    d.emit('retryScheduled', { notificationId: 'n', attempt: 2, delayMs: 1000, topic: 'retry.1s' });
    d.emit('repaired', { count: 4 });
    d.emit('assigned', { partitions: 3, lane: 'normal' });
    d.emit('assigned', { partitions: 2, lane: 'normal' });
    d.emit('assigned', { partitions: 1, lane: 'high' });
    const text = await m.render();
    expect(text).toContain('notify_attempts_total{outcome="transient",channel="webhook"} 1');
    expect(text).toContain('notify_attempts_total{outcome="sent",channel="webhook"} 1');
    expect(text).toContain('notify_attempts_total{outcome="suppressed",channel="email"} 1');
    expect(text).toContain('notify_provider_latency_seconds_count{channel="webhook",outcome="transient"} 1');
    expect(text).toContain('notify_provider_latency_seconds_sum{channel="webhook",outcome="sent"} 0.03');
    expect(text).not.toContain('notify_provider_latency_seconds_count{channel="email"');
    expect(text).toContain('notify_dead_total{channel="email",reason="suppressed"} 1');
    expect(text).not.toContain('notify_dead_total{channel="webhook"');
    expect(text).toContain('notify_dead_letters_total{reason="bad_json"} 1');
    expect(text).toContain('notify_consumer_errors_total{phase="commit"} 1');
    expect(text).toContain('notify_dispatch_lateness_seconds_count 1');
    expect(text).toContain('notify_retries_scheduled_total{topic="retry.1s"} 1');
    expect(text).toContain('notify_repaired_total 4');
    expect(text).toContain('notify_kafka_group_joins_total{lane="normal"} 2');
    expect(text).toContain('notify_kafka_group_joins_total{lane="high"} 1');
    off();
    expect(d.count()).toBe(0);
  });
});
