import { z } from 'zod';
import { ValidationError, type FieldIssue } from '../errors.js';
import { CHANNELS, type Channel } from './state.js';

/** Largest serialized size of body + data + metadata + subject that an intent may carry. */
export const MAX_CONTENT_BYTES = 64 * 1024;

/** Deepest nesting of objects and arrays in `data`. PostgreSQL's jsonb parser fails on very deep values. */
export const MAX_DATA_DEPTH = 32;

// PostgreSQL text and jsonb cannot hold U+0000, and a lone UTF-16 surrogate has no UTF-8 form:
// both would fail at INSERT time, so they are refused as invalid input instead.
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The first problem that would stop `value` from being stored (a string PostgreSQL refuses, or nesting too deep), with its path. */
function storageProblem(value: unknown, path: string, depth: number): FieldIssue | null {
  if (typeof value === 'string') {
    return UNSTORABLE.test(value) ? { path, message: 'must not contain U+0000 or unpaired surrogates' } : null;
  }
  if (value === null || typeof value !== 'object') return null;
  if (depth > MAX_DATA_DEPTH) return { path, message: `must not nest deeper than ${MAX_DATA_DEPTH} levels` };
  for (const [key, child] of Object.entries(value)) {
    const childPath = `${path}.${key}`;
    if (UNSTORABLE.test(key)) return { path: childPath, message: 'keys must not contain U+0000 or unpaired surrogates' };
    const problem = storageProblem(child, childPath, depth + 1);
    if (problem) return problem;
  }
  return null;
}

const E164 = /^\+[1-9]\d{6,14}$/;
// Deliberately simple: one @, no spaces, a dot in the domain. The SMTP server is the final judge.
const EMAIL = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/;

/** Why `to` is not a valid recipient for `channel`, or null when it is. */
export function recipientProblem(channel: Channel, to: string): string | null {
  switch (channel) {
    case 'email':
      return to.length <= 254 && EMAIL.test(to) ? null : 'must be an email address';
    case 'sms':
      return E164.test(to) ? null : 'must be a phone number in E.164 form, e.g. +14155550100';
    case 'webhook': {
      let url: URL;
      try {
        url = new URL(to);
      } catch {
        return 'must be an absolute http or https URL';
      }
      if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must use http or https';
      if (url.hostname === '') return 'must name a host';
      if (url.username !== '' || url.password !== '') return 'must not carry credentials';
      if (to.length > 2048) return 'must be at most 2048 characters';
      return null;
    }
  }
}

/**
 * The fields a caller may send, as validated by `enqueue` and by the API (which builds its
 * OpenAPI document from this same schema). snake_case, like the API.
 */
export const IntentFields = z
  .object({
    channel: z.string().min(1).describe('Delivery channel: email, sms or webhook'),
    to: z.string().min(1).max(2048).describe('Email address, E.164 phone number or webhook URL'),
    subject: z.string().max(998).optional().describe('Email subject (email only)'),
    body: z.string().min(1).optional().describe('Message body; give body or template'),
    template: z.string().min(1).max(200).optional().describe('Template name, rendered at send time'),
    template_version: z.int().min(1).optional().describe('Pin a template version; default: newest at send time'),
    data: z.record(z.string(), z.unknown()).optional().describe('Template variables, or the webhook payload data'),
    category: z.string().min(1).max(100).optional().describe('Category matched against recipient opt-outs'),
    expires_at: z.iso.datetime({ offset: true }).optional().describe('Give up after this instant (ISO 8601)'),
    ttl_seconds: z.int().min(1).max(30 * 86_400).optional().describe('Give up this many seconds after creation'),
    metadata: z.record(z.string().max(100), z.string().max(1000)).optional().describe('Your own labels, returned as given'),
  })
  .strict();
export type IntentFields = z.infer<typeof IntentFields>;

/** What a domain service asks for: the fields plus who asks and how to dedupe. */
export interface NotificationIntent extends IntentFields {
  readonly tenant_id: string;
  /** `(tenant, key)` returns the original notification on repeat. */
  readonly idempotency_key?: string | undefined;
  /** W3C trace context to carry through Kafka into the dispatcher. */
  readonly traceparent?: string | undefined;
}

/** An intent after validation: channel known, recipient valid, expiry resolved. */
export interface ValidIntent extends Omit<IntentFields, 'channel'> {
  readonly channel: Channel;
  readonly tenant_id: string;
  readonly idempotency_key: string | undefined;
  readonly traceparent: string | undefined;
}

const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

function zodIssues(error: z.ZodError): FieldIssue[] {
  return error.issues.map((i) => ({ path: i.path.join('.') || '(root)', message: i.message }));
}

/**
 * Validates an intent. Throws a `ValidationError` whose `code` says what kind of problem it is
 * (`unknown_channel`, `payload_too_large`, `bad_expiry`, or `validation_failed` with every field issue).
 */
export function validateIntent(intent: NotificationIntent, now: Date): ValidIntent {
  const { tenant_id, idempotency_key, traceparent, ...fields } = intent;
  const issues: FieldIssue[] = [];
  for (const [key, value] of Object.entries({ tenant_id, idempotency_key, ...fields })) {
    const problem = storageProblem(value, key, 1);
    if (problem) issues.push(problem);
  }
  if (typeof tenant_id !== 'string' || tenant_id === '' || tenant_id.length > 200) {
    issues.push({ path: 'tenant_id', message: 'must be a non-empty string of at most 200 characters' });
  }
  if (idempotency_key !== undefined && (typeof idempotency_key !== 'string' || idempotency_key === '' || idempotency_key.length > 255)) {
    issues.push({ path: 'idempotency_key', message: 'must be 1 to 255 characters' });
  }
  const parsed = IntentFields.safeParse(fields);
  if (!parsed.success) issues.push(...zodIssues(parsed.error));
  if (issues.length > 0 || !parsed.success) {
    throw new ValidationError('validation_failed', `invalid notification: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues);
  }
  const f = parsed.data;
  if (!(CHANNELS as readonly string[]).includes(f.channel)) {
    throw new ValidationError('unknown_channel', `unknown channel "${f.channel}"; expected one of ${CHANNELS.join(', ')}`, [
      { path: 'channel', message: `must be one of ${CHANNELS.join(', ')}` },
    ]);
  }
  const channel = f.channel as Channel;
  const recipient = recipientProblem(channel, f.to);
  if (recipient) issues.push({ path: 'to', message: recipient });
  if ((f.body === undefined) === (f.template === undefined)) {
    issues.push({ path: 'body', message: 'give exactly one of body or template' });
  }
  if (f.template_version !== undefined && f.template === undefined) {
    issues.push({ path: 'template_version', message: 'only with template' });
  }
  if (f.subject !== undefined && channel !== 'email') {
    issues.push({ path: 'subject', message: 'only the email channel has a subject' });
  }
  if (issues.length > 0) {
    throw new ValidationError('validation_failed', `invalid notification: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues);
  }
  if (f.expires_at !== undefined && f.ttl_seconds !== undefined) {
    throw new ValidationError('bad_expiry', 'give expires_at or ttl_seconds, not both', [{ path: 'expires_at', message: 'conflicts with ttl_seconds' }]);
  }
  if (f.expires_at !== undefined && new Date(f.expires_at).getTime() <= now.getTime()) {
    throw new ValidationError('bad_expiry', `expires_at ${f.expires_at} is not in the future`, [{ path: 'expires_at', message: 'must be in the future' }]);
  }
  const size = Buffer.byteLength(JSON.stringify([f.subject, f.body, f.data, f.metadata]));
  if (size > MAX_CONTENT_BYTES) {
    throw new ValidationError('payload_too_large', `the notification content is ${size} bytes; at most ${MAX_CONTENT_BYTES} are allowed`, [
      { path: 'body', message: `content over ${MAX_CONTENT_BYTES} bytes` },
    ]);
  }
  return {
    ...f,
    channel,
    tenant_id,
    idempotency_key,
    traceparent: traceparent !== undefined && TRACEPARENT.test(traceparent) ? traceparent : undefined,
  };
}
