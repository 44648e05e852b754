import { describe, expect, it } from 'vitest';
import { formatTraceparent, parseTraceparent } from './traceparent.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('parseTraceparent (W3C Trace Context)', () => {
  it('reads version 00 and round-trips it', () => {
    const tp = `00-${TRACE}-${SPAN}-01`;
    expect(parseTraceparent(tp)).toEqual({ traceId: TRACE, spanId: SPAN, traceFlags: 1 });
    expect(formatTraceparent(parseTraceparent(tp)!)).toBe(tp);
  });

  it('reads a later version by its first four fields, extra fields included, as the spec asks', () => {
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-00`)).toEqual({ traceId: TRACE, spanId: SPAN, traceFlags: 0 });
    expect(parseTraceparent(`cc-${TRACE}-${SPAN}-01-what-the-future-holds`)?.traceId).toBe(TRACE);
  });

  it.each([
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['version 00 with more fields', `00-${TRACE}-${SPAN}-01-extra`],
    ['all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['all-zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['upper case', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['garbage', 'garbage'],
    ['empty', ''],
  ])('refuses %s', (_name, header) => {
    expect(parseTraceparent(header)).toBeUndefined();
  });

  it('tolerates surrounding whitespace and refuses null and undefined', () => {
    expect(parseTraceparent(`  00-${TRACE}-${SPAN}-01 `)?.spanId).toBe(SPAN);
    expect(parseTraceparent(null)).toBeUndefined();
    expect(parseTraceparent(undefined)).toBeUndefined();
  });
});
