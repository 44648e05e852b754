import { type SpanContext, SpanKind, SpanStatusCode, TraceFlags, context, isSpanContextValid, trace } from '@opentelemetry/api';
import { formatTraceparent as formatTraceContext, parseTraceparent as parseTraceContext } from '@notify/runtime';
import { pooledRandomBytes } from '@notify/outbox';

/** The tracer name of the API's spans. */
export const TRACER_NAME = '@notify/api';

/**
 * The remote parent of a request: its W3C `traceparent` header, read by the service's one parser
 * (`parseTraceparent` in @notify/runtime). Undefined for anything malformed, so a bad header
 * starts a new trace instead of failing the request.
 */
export function parseTraceparent(header: string | null | undefined): SpanContext | undefined {
  const tc = parseTraceContext(header);
  return tc ? { ...tc, isRemote: true } : undefined;
}

/** The `traceparent` header value of a span context. */
export function formatTraceparent(sc: SpanContext): string {
  return formatTraceContext(sc);
}

/** A new root `traceparent` (sampled), for a request that arrived without one. */
export function newTraceparent(random: (n: number) => Buffer = pooledRandomBytes): string {
  return formatTraceparent({ traceId: random(16).toString('hex'), spanId: random(8).toString('hex'), traceFlags: TraceFlags.SAMPLED });
}

/** What `withServerSpan` hands to the code it wraps. */
export interface RequestTrace {
  /** The trace context to store with work this request creates (the intent's `traceparent`). */
  readonly traceparent: string;
  readonly traceId: string;
}

/**
 * Runs `fn` inside a SERVER span (OpenTelemetry API) that continues the caller's `traceparent`.
 * With an SDK registered, the stored `traceparent` names this span, so the dispatcher's span is
 * its child; without one (the API's tracer is a no-op) it is the caller's own, or a new root when
 * the caller sent none, so one delivery is still one trace across the API, Kafka and the dispatcher.
 */
export async function withServerSpan<T>(
  name: string,
  incoming: string | null | undefined,
  fn: (t: RequestTrace) => Promise<T>,
): Promise<T> {
  const parent = parseTraceparent(incoming);
  const parentContext = parent ? trace.setSpanContext(context.active(), parent) : context.active();
  const tracer = trace.getTracer(TRACER_NAME);
  return tracer.startActiveSpan(name, { kind: SpanKind.SERVER }, parentContext, async (span) => {
    const sc = span.spanContext();
    const traceparent = isSpanContextValid(sc) ? formatTraceparent(sc) : newTraceparent();
    try {
      return await fn({ traceparent, traceId: traceparent.slice(3, 35) });
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}
