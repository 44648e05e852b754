import type { ContentPreparer } from '../content/content.js';
import type { DeliveryNotification } from '../sql/notification-get-many.js';

/**
 * A `ContentPreparer` that passes the body through and checks no preferences: for tests that
 * are about delivery, not content. Production uses `createContentPreparer`.
 */
export function plainContent(): ContentPreparer {
  return {
    async prepare(n: DeliveryNotification, attempt: number) {
      if (n.body === null) return { kind: 'permanent', error: `notification ${n.id} has a template; plainContent renders bodies only` };
      return {
        kind: 'ready',
        delivery: {
          id: n.id,
          tenantId: n.tenant_id,
          channel: n.channel,
          to: n.recipient,
          subject: n.subject,
          body: n.body,
          data: n.data,
          metadata: n.metadata,
          attempt,
          createdAt: new Date(n.created_at),
        },
      };
    },
  };
}
