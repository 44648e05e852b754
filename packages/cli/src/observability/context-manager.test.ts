import { context, createContextKey, trace } from '@opentelemetry/api';
import { afterAll, describe, expect, it } from 'vitest';
import { installTraceContext } from './context-manager.js';
import { withServerSpan } from '@notify/api';

const KEY = createContextKey('test');

describe('AsyncLocalContextManager', () => {
  afterAll(() => context.disable());

  it('without it, context.with activates nothing (the problem it solves)', () => {
    context.with(context.active().setValue(KEY, 1), () => {
      expect(context.active().getValue(KEY)).toBeUndefined();
    });
  });

  it('once installed, the active context follows awaits, and a second install is refused', async () => {
    expect(installTraceContext()).toBe(true);
    expect(installTraceContext()).toBe(false);
    await context.with(context.active().setValue(KEY, 'a'), async () => {
      await new Promise((r) => setImmediate(r));
      expect(context.active().getValue(KEY)).toBe('a');
    });
    expect(context.active().getValue(KEY)).toBeUndefined();
  });

  it('makes the request span active inside withServerSpan, so code below it can read the trace id', async () => {
    const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const seen = await withServerSpan('test', tp, async () => {
      await Promise.resolve();
      return trace.getActiveSpan()?.spanContext().traceId;
    });
    expect(seen).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  });

  it('bind runs a function in the bound context', () => {
    const ctx = context.active().setValue(KEY, 'bound');
    const fn = context.bind(ctx, () => context.active().getValue(KEY));
    expect(fn()).toBe('bound');
  });
});
