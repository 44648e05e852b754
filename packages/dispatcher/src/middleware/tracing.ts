import { ProxyTracerProvider, ROOT_CONTEXT, SpanKind, SpanStatusCode, propagation, trace, type Context } from '@opentelemetry/api';
import { HEADERS } from '@notify/contract';
import { parseTraceparent } from '@notify/runtime';
import type { Middleware } from '../message.js';

/**
 * The parent context carried by a message's headers. Uses the registered propagator when an
 * OpenTelemetry SDK installed one; otherwise reads the W3C `traceparent` header itself, so the
 * trace id reaches logs even without an SDK.
 */
export function extractTraceContext(headers: Readonly<Record<string, string>>): Context {
  const extracted = propagation.extract(ROOT_CONTEXT, headers);
  if (trace.getSpanContext(extracted)) return extracted;
  const tc = parseTraceparent(headers[HEADERS.traceparent]);
  if (!tc) return ROOT_CONTEXT;
  // Fields named, not spread: a spread followed by more fields is slow on Node 20 (µs per object).
  return trace.setSpanContext(ROOT_CONTEXT, { traceId: tc.traceId, spanId: tc.spanId, traceFlags: tc.traceFlags, isRemote: true });
}

/**
 * The trace id for a delivery's log lines: the active span's (with an SDK and its context
 * manager, the delivery span), else the one in the message's headers. Without an SDK the
 * OpenTelemetry API has no context manager, so the active span is never set.
 */
export function deliveryTraceId(headers: Readonly<Record<string, string>>): string | undefined {
  const active = trace.getActiveSpan()?.spanContext();
  if (active && trace.isSpanContextValid(active)) return active.traceId;
  return trace.getSpanContext(extractTraceContext(headers))?.traceId;
}

/**
 * Whether a tracer provider (an OpenTelemetry SDK) is registered. The API's own global is a
 * `ProxyTracerProvider` that delegates to the SDK's once one registers; a global that is not this
 * copy's proxy came from another copy of the API, so an SDK is assumed.
 */
function tracerRegistered(tracerName: string): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer(tracerName) !== undefined;
}

/**
 * Middleware: one CONSUMER span per delivered message, child of the message's `traceparent`
 * (the request that created the notification), once an OpenTelemetry SDK is registered.
 * Without one the message goes straight to the handler: a span of the no-op tracer records
 * nothing, and nothing reads the active context (`notify start` installs no context manager;
 * the handler's log lines take the trace id from the message's header, `deliveryTraceId`), so
 * its span, attributes, context and wrapper promise per delivery would be work for nothing.
 * The check is made per message until an SDK is seen (one may register after start-up).
 */
export function tracing(tracerName = '@notify/dispatcher'): Middleware {
  const tracer = trace.getTracer(tracerName);
  let sdk = false;
  return (next) => (message, signal, hooks) => {
    if (!sdk && !(sdk = tracerRegistered(tracerName))) return next(message, signal, hooks);
    const parent = extractTraceContext(message.headers);
    return tracer.startActiveSpan(
      'notify.deliver',
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          'messaging.system': 'kafka',
          'messaging.destination.name': message.topic,
          'messaging.kafka.destination.partition': message.partition,
          'messaging.kafka.message.offset': Number(message.offset),
          'notify.notification_id': message.headers[HEADERS.notificationId] ?? '',
          'notify.attempt': Number(message.headers[HEADERS.attempt] ?? 0),
        },
      },
      parent,
      async (span) => {
        try {
          const result = await next(message, signal, hooks);
          span.setAttribute('notify.result', result.kind);
          if (result.kind === 'recorded') {
            span.setAttribute('notify.outcome', result.plan.attemptOutcome);
            span.setAttribute('notify.state', result.plan.to);
            if (result.plan.to === 'dead') span.setStatus({ code: SpanStatusCode.ERROR, message: result.plan.deadReason ?? 'dead' });
          }
          if (result.kind === 'dead-lettered') span.setStatus({ code: SpanStatusCode.ERROR, message: result.reason });
          return result;
        } catch (err) {
          span.recordException(err as Error);
          span.setStatus({ code: SpanStatusCode.ERROR });
          throw err;
        } finally {
          span.end();
        }
      },
    );
  };
}
