import { createHash } from 'node:crypto';
import type { ValidIntent } from './model/intent.js';

/** JSON with object keys sorted at every depth, so equal requests serialise equally. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/**
 * The hash stored with an idempotency key: sha256 over the canonical form of what the caller
 * asked for. The trace context and the key itself are not part of the request's meaning.
 */
export function requestHash(intent: ValidIntent): string {
  const { idempotency_key: _key, traceparent: _trace, ...request } = intent;
  return createHash('sha256').update(canonicalJson(request)).digest('hex');
}
