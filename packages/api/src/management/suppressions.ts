import { type Channel, type SqlExecutor } from '@notify/outbox';
import { normalizeRecipient, suppressionDelete, suppressionInsert } from '@notify/runtime';
import { ProblemError } from '../problem.js';
import type { SuppressionView } from '../management-schemas.js';
import { type SuppressionRow, suppressionList } from '../sql/suppression-list.js';
import { cursorRefused } from '../views.js';

// Opt-out management shared by /v1/suppressions and the console. Their effect is checked at send
// time by the dispatcher, as before.

/** An opt-out row as the API shows it. */
export function suppressionView(r: SuppressionRow): SuppressionView {
  return { channel: r.channel, to: r.recipient, category: r.category, reason: r.reason, created_at: new Date(r.created_at).toISOString() };
}

/**
 * Why `to` cannot be a recipient of `channel`, or null: the rules enqueue applies
 * (notify_recipient_problem: an email address, an E.164 number, an http(s) URL), to the recipient
 * as an opt-out stores it (trimmed; email lower-cased). An opt-out no notification could match
 * would only mislead whoever reads the list.
 */
async function optOutRecipientProblem(db: SqlExecutor, channel: Channel, to: string): Promise<string | null> {
  const { rows } = await db.query<{ problem: string | null }>('SELECT notify_recipient_problem($1::text, $2::text) AS problem', [
    channel,
    normalizeRecipient(channel, to),
  ]);
  return rows[0]?.problem ?? null;
}

/**
 * Records an opt-out (idempotent: a repeat updates the reason) and returns it as stored, or, for a
 * recipient the channel cannot have, why (`optOutRecipientProblem`), and nothing is stored. The
 * caller says it its way: the API a 422 on `to`, the console the form's field error.
 */
export async function addSuppression(
  db: SqlExecutor,
  tenantId: string,
  input: { channel: Channel; to: string; category?: string | undefined; reason?: string | undefined },
  now: Date,
): Promise<{ readonly added: SuppressionView } | { readonly problem: string }> {
  const problem = await optOutRecipientProblem(db, input.channel, input.to);
  if (problem !== null) return { problem };
  const category = input.category ?? '*';
  await suppressionInsert(db, { tenantId, channel: input.channel, recipient: input.to, category, reason: input.reason ?? null, now });
  const recipient = normalizeRecipient(input.channel, input.to);
  const [row] = await suppressionList(db, { tenantId, channel: input.channel, recipient, category, limit: 1 });
  return { added: suppressionView(row!) };
}

/** Removes one opt-out; 404 when there is none. */
export async function removeSuppression(
  db: SqlExecutor,
  tenantId: string,
  input: { channel: Channel; to: string; category?: string | undefined },
): Promise<void> {
  const removed = await suppressionDelete(db, { tenantId, channel: input.channel, recipient: input.to, category: input.category ?? '*' });
  if (!removed)
    throw new ProblemError(
      'not_found',
      `no opt-out for ${input.channel} ${input.to}${input.category ? ` in category ${input.category}` : ''}`,
    );
}

/** The opaque cursor after a row. */
export function encodeSuppressionCursor(r: SuppressionRow): string {
  return Buffer.from(JSON.stringify([r.channel, r.recipient, r.category]), 'utf8').toString('base64url');
}

/** The position inside a cursor; a 400 when it is not one we returned. */
export function decodeSuppressionCursor(cursor: string): [string, string, string] {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 3 && v.every((x) => typeof x === 'string')) return v as [string, string, string];
  } catch {
    // fall through
  }
  throw cursorRefused();
}
