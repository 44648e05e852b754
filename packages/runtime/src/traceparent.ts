/** A W3C trace context as carried by a `traceparent` header. */
export interface TraceContext {
  /** 32 lowercase hex characters, not all zero. */
  readonly traceId: string;
  /** 16 lowercase hex characters, not all zero. */
  readonly spanId: string;
  /** The trace flags byte (bit 0: sampled). */
  readonly traceFlags: number;
}

// version "-" trace-id "-" parent-id "-" flags, then (versions after 00 only) more "-" fields.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZEROS = /^0+$/;

/**
 * Parses a W3C `traceparent` header by the spec's rules (Trace Context, "Versioning of
 * traceparent"): version `ff` is invalid; version `00` has exactly four fields; a later version
 * is read by its first four fields, as the spec asks of a parser that does not know it; all-zero
 * ids are invalid. Returns undefined for anything malformed, so a bad header starts a new trace
 * instead of failing the request or the delivery. The one parser of the service: the API and the
 * dispatcher both use it.
 */
export function parseTraceparent(header: string | null | undefined): TraceContext | undefined {
  if (!header) return undefined;
  const m = TRACEPARENT.exec(header.trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (ZEROS.test(traceId) || ZEROS.test(spanId)) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16) };
}

/** The version-00 `traceparent` value of a trace context. */
export function formatTraceparent(tc: TraceContext): string {
  return `00-${tc.traceId}-${tc.spanId}-${(tc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}
