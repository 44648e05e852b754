import type { Delivery } from '@notify/providers';
import type { DeliveryNotification } from '../sql/notification-get-many.js';
import type { SuppressionRecord } from '@notify/runtime';

/**
 * What the dispatcher does with a notification before calling its provider: resolve the
 * content (render the template, or take the body) and check the recipient's preferences.
 * Runs at send time, not enqueue time: a recipient may opt out, or a template may be fixed, in between.
 */
export type Prepared =
  | { readonly kind: 'ready'; readonly delivery: Delivery }
  /** The recipient opted out: the notification ends dead with reason `suppressed`, no provider call. */
  | { readonly kind: 'suppressed'; readonly reason: string }
  /** The content cannot be built (missing template or variable): a permanent failure. */
  | { readonly kind: 'permanent'; readonly error: string };

/**
 * The content port. `prepare` never throws for bad content; a throw (database down) is transient.
 * `optOut` is the recipient's opt-out when the caller already read it (with the notification, in
 * the same statement): the record, or null for none; undefined: `prepare` checks it itself.
 */
export interface ContentPreparer {
  prepare(notification: DeliveryNotification, attempt: number, optOut?: SuppressionRecord | null): Promise<Prepared>;
}
