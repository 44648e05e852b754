import { AsyncLocalStorage } from 'node:async_hooks';
import {
  ROOT_CONTEXT,
  context,
  trace,
  type Attributes,
  type Context,
  type ContextManager,
  type Span,
  type SpanOptions,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { silentLogger } from '@notify/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDispatcherEvents } from '../events.js';
import { compose, type InboundMessage, type MessageHandler } from '../message.js';
import { createMemoryDeadLetterSink } from '../testing/memory-dead-letter-sink.js';
import { MAX_DLQ_REASON_CHARS, deadLetter, deadLetterFor } from './dead-letter.js';
import { deliveryTraceId, extractTraceContext, tracing } from './tracing.js';

/** The smallest context manager an SDK would install (AsyncLocalStorage-based). */
class TestContextManager implements ContextManager {
  #als = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.#als.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.#als.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    return this;
  }
}

/** What a test SDK's span recorded. */
interface RecordedSpan {
  readonly name: string;
  readonly traceId: string | undefined;
  readonly parentSpanId: string | undefined;
  readonly attributes: Attributes;
  ended: boolean;
}

/** The smallest tracer provider an SDK would register: records every span it starts. */
class RecordingTracerProvider implements TracerProvider {
  readonly spans: RecordedSpan[] = [];
  getTracer(): Tracer {
    const spans = this.spans;
    const startSpan = (name: string, options: SpanOptions = {}, ctx: Context = context.active()): Span => {
      const parent = trace.getSpanContext(ctx);
      const recorded: RecordedSpan = {
        name,
        traceId: parent?.traceId,
        parentSpanId: parent?.spanId,
        attributes: { ...options.attributes },
        ended: false,
      };
      spans.push(recorded);
      const spanContext = { traceId: parent?.traceId ?? 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 };
      const span = {
        spanContext: () => spanContext,
        setAttribute: (key: string, value: string) => {
          (recorded.attributes as Record<string, unknown>)[key] = value;
          return span;
        },
        setAttributes: () => span,
        addEvent: () => span,
        addLink: () => span,
        addLinks: () => span,
        setStatus: () => span,
        updateName: () => span,
        end: () => void (recorded.ended = true),
        isRecording: () => true,
        recordException: () => {},
      };
      return span;
    };
    const startActiveSpan = (name: string, ...rest: unknown[]) => {
      const fn = rest.at(-1) as (span: Span) => unknown;
      const options = (rest.length > 1 ? rest[0] : {}) as SpanOptions;
      const ctx = (rest.length > 2 ? rest[1] : context.active()) as Context;
      const span = startSpan(name, options, ctx);
      return context.with(trace.setSpan(ctx, span), fn, undefined, span);
    };
    return { startSpan, startActiveSpan };
  }
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const message = (headers: Record<string, string> = {}): InboundMessage => ({
  topic: 'p.requests',
  partition: 2,
  offset: '41',
  key: Buffer.from('k'),
  value: Buffer.from('{"v":9}'),
  headers,
});

describe('tracing middleware', () => {
  beforeAll(() => {
    context.setGlobalContextManager(new TestContextManager());
  });
  afterAll(() => {
    context.disable();
  });

  it('reads a W3C traceparent without an SDK propagator', () => {
    const ctx = extractTraceContext({ traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` });
    expect(trace.getSpanContext(ctx)).toMatchObject({ traceId: TRACE_ID, spanId: '00f067aa0ba902b7', isRemote: true });
    expect(trace.getSpanContext(extractTraceContext({ traceparent: 'garbage' }))).toBeUndefined();
    expect(trace.getSpanContext(extractTraceContext({ traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` }))).toBeUndefined();
  });

  it('without an SDK hands the message straight to the handler: no span, the trace id still read from the header', async () => {
    let active: unknown = 'unset';
    let traceId: string | undefined;
    const handler: MessageHandler = async (m) => {
      active = trace.getActiveSpan();
      traceId = deliveryTraceId(m.headers);
      return { kind: 'skipped', notificationId: 'x', reason: 'terminal' };
    };
    const result = await tracing()(handler)(message({ traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` }), new AbortController().signal);
    expect(result).toEqual({ kind: 'skipped', notificationId: 'x', reason: 'terminal' });
    expect(active).toBeUndefined();
    expect(traceId).toBe(TRACE_ID);
    expect(deliveryTraceId({})).toBeUndefined();
  });

  it('with an SDK, also one registered after start-up, runs the handler in a span whose parent is the message trace', async () => {
    const middleware = tracing(); // made before the SDK registers, as the service's is
    const handler: MessageHandler = async (m) => {
      expect(trace.getActiveSpan()?.spanContext().traceId).toBe(TRACE_ID);
      expect(deliveryTraceId(m.headers)).toBe(TRACE_ID);
      return { kind: 'skipped', notificationId: 'x', reason: 'terminal' };
    };
    // A delivery before the SDK registers runs without a span.
    await middleware(async () => {
      expect(trace.getActiveSpan()).toBeUndefined();
      return { kind: 'skipped', notificationId: 'x', reason: 'terminal' };
    })(message({ traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` }), new AbortController().signal);
    const sdk = new RecordingTracerProvider();
    expect(trace.setGlobalTracerProvider(sdk)).toBe(true);
    try {
      await middleware(handler)(
        message({ traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01`, 'notification-id': 'n1', attempt: '2' }),
        new AbortController().signal,
      );
    } finally {
      trace.disable();
    }
    expect(sdk.spans).toEqual([
      {
        name: 'notify.deliver',
        traceId: TRACE_ID,
        parentSpanId: '00f067aa0ba902b7',
        attributes: expect.objectContaining({
          'messaging.destination.name': 'p.requests',
          'messaging.kafka.message.offset': 41,
          'notify.notification_id': 'n1',
          'notify.attempt': 2,
          'notify.result': 'skipped',
        }) as Attributes,
        ended: true,
      },
    ]);
  });
});

describe('dead-letter middleware', () => {
  it('publishes a dead-letter result with the reason and the source, and acknowledges it', async () => {
    const sink = createMemoryDeadLetterSink();
    const events = createDispatcherEvents(silentLogger);
    const seen: string[] = [];
    events.on('deadLettered', (e) => seen.push(`${e.topic}/${e.partition}/${e.offset}: ${e.reason}`));
    const handler = compose(deadLetter(sink, { events, logger: silentLogger }))(async () => ({
      kind: 'dead-letter',
      code: 'unknown_version',
      reason: 'unknown schema version 9',
    }));
    const result = await handler(message({ origin: 'x' }), new AbortController().signal);
    expect(result).toEqual({ kind: 'dead-lettered', code: 'unknown_version', reason: 'unknown schema version 9' });
    expect(sink.letters).toEqual([
      {
        key: Buffer.from('k'),
        value: Buffer.from('{"v":9}'),
        headers: {
          origin: 'x',
          'dlq-reason': 'unknown schema version 9',
          'dlq-source-topic': 'p.requests',
          'dlq-source-partition': '2',
          'dlq-source-offset': '41',
        },
      },
    ]);
    expect(seen).toEqual(['p.requests/2/41: unknown schema version 9']);
  });

  it('passes other results through and lets a failing sink throw (the message is retried, not lost)', async () => {
    const events = createDispatcherEvents(silentLogger);
    const ok = compose(deadLetter(createMemoryDeadLetterSink(), { events, logger: silentLogger }))(async () => ({
      kind: 'skipped',
      notificationId: 'n',
      reason: 'terminal',
    }));
    expect(await ok(message(), new AbortController().signal)).toEqual({ kind: 'skipped', notificationId: 'n', reason: 'terminal' });
    const broken = deadLetter(
      {
        send: async () => {
          throw new Error('broker down');
        },
      },
      { events, logger: silentLogger },
    )(async () => ({ kind: 'dead-letter', code: 'bad_json', reason: 'bad' }));
    await expect(broken(message(), new AbortController().signal)).rejects.toThrow('broker down');
  });
});

describe('deadLetterFor', () => {
  it('cuts a huge reason so the dead letter stays within the broker limit', () => {
    const letter = deadLetterFor(message(), `unknown notification ${'x'.repeat(900_000)}`);
    expect(letter.headers['dlq-reason']).toHaveLength(MAX_DLQ_REASON_CHARS);
    expect(letter.headers['dlq-reason']).toMatch(/^unknown notification x+…$/);
  });
});
