import type { Channel } from '@notify/outbox';

/**
 * The form a recipient is stored and compared in for opt-outs: email addresses trimmed and
 * lower-cased (mail systems treat them case-insensitively in practice, and an opt-out must not
 * be dodged by "Bob@Example.com"), phone numbers and URLs trimmed only.
 */
export function normalizeRecipient(channel: Channel, recipient: string): string {
  const trimmed = recipient.trim();
  return channel === 'email' ? trimmed.toLowerCase() : trimmed;
}
