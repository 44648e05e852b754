import { createHash } from 'node:crypto';

/**
 * The Kafka key of every message about a notification: `<tenant>/<channel>/<hash>`, where `<hash>`
 * is the first 22 characters of base64url(sha256(recipient)) (132 bits). One recipient's messages
 * share a key, so they keep their order on one partition; the recipient itself (an address, a
 * phone number) is hashed so it does not sit in Kafka keys.
 */
export function messageKey(tenantId: string, channel: string, recipient: string): string {
  const digest = createHash('sha256').update(recipient).digest('base64url').slice(0, 22);
  return `${tenantId}/${channel}/${digest}`;
}
