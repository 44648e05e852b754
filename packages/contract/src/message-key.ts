import { createHash } from 'node:crypto';

/** Keys remembered at most; when full the memory starts over (keys are computed again, never wrong). */
const REMEMBERED_KEYS = 4_096;
const remembered = new Map<string, string>();

/**
 * The Kafka key of every message about a notification: `<tenant>/<channel>/<hash>`, where `<hash>`
 * is the first 22 characters of base64url(sha256(recipient)) (132 bits). One recipient's messages
 * share a key, so they keep their order on one partition; the recipient itself (an address, a
 * phone number) is hashed so it does not sit in Kafka keys.
 *
 * A pure function of its arguments, remembered for recent recipients: every attempt's status event
 * and retry request needs the key again, and a sha256 costs more than a map lookup.
 */
export function messageKey(tenantId: string, channel: string, recipient: string): string {
  // Length-prefixed, so no two argument triples share an id whatever characters they hold.
  const id = `${tenantId.length}:${tenantId}${channel.length}:${channel}${recipient}`;
  let key = remembered.get(id);
  if (key === undefined) {
    const digest = createHash('sha256').update(recipient).digest('base64url').slice(0, 22);
    key = `${tenantId}/${channel}/${digest}`;
    if (remembered.size >= REMEMBERED_KEYS) remembered.clear();
    remembered.set(id, key);
  }
  return key;
}
