import { AsyncLocalStorage } from 'node:async_hooks';
import { ROOT_CONTEXT, context, trace, type Context, type ContextManager } from '@opentelemetry/api';
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

  it('runs the handler in a span whose parent is the message trace', async () => {
    let seen: string | undefined;
    const handler: MessageHandler = async (m) => {
      seen = trace.getActiveSpan()?.spanContext().traceId;
      expect(deliveryTraceId(m.headers)).toBe(TRACE_ID);
      return { kind: 'skipped', notificationId: 'x', reason: 'terminal' };
    };
    await tracing()(handler)(message({ traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` }), new AbortController().signal);
    expect(seen).toBe(TRACE_ID);
    expect(deliveryTraceId({})).toBeUndefined();
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
