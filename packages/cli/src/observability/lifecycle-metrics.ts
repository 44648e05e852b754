import type { Metrics } from './metrics.js';

type Listener<P> = (payload: P) => void;

/**
 * The relay events the metrics read (the relay's `RelayEvents` from @notify/relay fits). Declared
 * by shape, so this module needs only the fields it uses.
 */
export interface RelayEventSource {
  on(event: 'published', listener: Listener<{ readonly count: number }>): () => void;
  on(event: 'publishError', listener: Listener<{ readonly stage: string }>): () => void;
  on(event: 'error', listener: Listener<{ readonly stage: string }>): () => void;
  on(event: 'refused', listener: Listener<{ readonly reason: string; readonly deadChannel: string | undefined }>): () => void;
}

/** The dispatcher events the metrics read (the dispatcher's `DispatcherEvents` from @notify/dispatcher fits). */
export interface DispatcherEventSource {
  on(event: 'attempt', listener: Listener<{ readonly channel: string; readonly outcome: string; readonly durationMs: number }>): () => void;
  on(event: 'dispatched', listener: Listener<{ readonly latenessMs: number }>): () => void;
  on(
    event: 'stateChanged',
    listener: Listener<{ readonly channel: string; readonly to: string; readonly deadReason: string | null }>,
  ): () => void;
  on(event: 'retryScheduled', listener: Listener<{ readonly topic: string }>): () => void;
  on(event: 'deadLettered', listener: Listener<{ readonly code: string }>): () => void;
  on(event: 'consumerError', listener: Listener<{ readonly phase: string }>): () => void;
  on(event: 'repaired', listener: Listener<{ readonly count: number }>): () => void;
  on(event: 'assigned', listener: Listener<{ readonly lane: string }>): () => void;
}

// Outcomes for which the dispatcher called a provider; suppressed and expired never reach one.
const PROVIDER_OUTCOMES = new Set(['sent', 'transient', 'permanent']);

/** Feeds the relay's lifecycle events into the metrics. Returns a function that unsubscribes. */
export function watchRelay(metrics: Metrics, relay: RelayEventSource): () => void {
  const offs = [
    relay.on('published', (e) => metrics.observePublished(e.count)),
    relay.on('publishError', (e) => metrics.observeRelayError(e.stage)),
    relay.on('error', (e) => metrics.observeRelayError(e.stage)),
    relay.on('refused', (e) => {
      // The reason's code only ("message_too_large: 2097412 bytes > …" → message_too_large): a bounded label set.
      metrics.observeRefused(e.reason.split(':')[0]!);
      if (e.deadChannel) metrics.observeDead(e.deadChannel, 'publish_failed');
    }),
  ];
  return () => offs.forEach((off) => off());
}

/** Feeds the dispatcher's lifecycle events into the metrics. Returns a function that unsubscribes. */
export function watchDispatcher(metrics: Metrics, dispatcher: DispatcherEventSource): () => void {
  const offs = [
    dispatcher.on('attempt', (e) =>
      metrics.observeAttempt({
        channel: e.channel,
        outcome: e.outcome,
        // durationMs is 0 when no provider was called (e.g. a template that does not render).
        latencySeconds: PROVIDER_OUTCOMES.has(e.outcome) && e.durationMs > 0 ? e.durationMs / 1000 : undefined,
      }),
    ),
    dispatcher.on('dispatched', (e) => metrics.observeLateness(e.latenessMs / 1000)),
    dispatcher.on('stateChanged', (e) => {
      if (e.to === 'dead') metrics.observeDead(e.channel, e.deadReason ?? 'unknown');
    }),
    dispatcher.on('retryScheduled', (e) => metrics.observeRetryScheduled(e.topic)),
    dispatcher.on('deadLettered', (e) => metrics.observeDeadLetter(e.code)),
    dispatcher.on('consumerError', (e) => metrics.observeConsumerError(e.phase)),
    dispatcher.on('repaired', (e) => metrics.observeRepaired(e.count)),
    dispatcher.on('assigned', (e) => metrics.observeGroupJoin(e.lane)),
  ];
  return () => offs.forEach((off) => off());
}
