import { describe, expect, it } from 'vitest';
import { formatTraceparent, newTraceparent, parseTraceparent, withServerSpan } from './tracing.js';

const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('traceparent', () => {
  it('round-trips a valid header', () => {
    const sc = parseTraceparent(TP);
    expect(sc).toMatchObject({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1 });
    expect(formatTraceparent(sc!)).toBe(TP);
  });
  it.each([
    ['garbage'],
    ['00-00000000000000000000000000000000-00f067aa0ba902b7-01'],
    ['00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01'],
    ['00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01'],
    [''],
  ])('rejects %s', (header) => {
    expect(parseTraceparent(header)).toBeUndefined();
  });
  it('makes new sampled roots that parse', () => {
    const tp = newTraceparent();
    expect(parseTraceparent(tp)?.traceFlags).toBe(1);
    expect(newTraceparent()).not.toBe(tp);
  });
});

describe('withServerSpan (no OpenTelemetry SDK registered)', () => {
  it('continues the caller’s trace', async () => {
    const seen = await withServerSpan('test', TP, async (t) => t);
    expect(seen.traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(seen.traceparent).toBe(TP);
  });
  it('starts a new trace when the header is missing or malformed', async () => {
    const a = await withServerSpan('test', undefined, async (t) => t);
    const b = await withServerSpan('test', 'nope', async (t) => t);
    expect(parseTraceparent(a.traceparent)).toBeDefined();
    expect(a.traceId).toHaveLength(32);
    expect(b.traceId).not.toBe(a.traceId);
  });
  it('passes errors through', async () => {
    await expect(withServerSpan('test', TP, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  });
});
