import { type Clock } from '@notify/runtime';
import { type TransactionLike, toExecutor } from '@notify/outbox';
import type { DeliveryNotification } from '../sql/notification-get-many.js';
import { createBatchLoader } from '../batch-loader.js';
import type { Delivery } from '@notify/providers';
import type { ContentPreparer, Prepared } from './content.js';
import { type TemplateRecord, templateGet } from './sql/template-get.js';
import type { SuppressionMatchParams, SuppressionRecord } from '@notify/runtime';
import { suppressionMatchMany } from './sql/suppression-match-many.js';
import { renderTemplate } from '@notify/runtime';

/** Dependencies and options of `createContentPreparer`. */
export interface ContentPreparerDeps {
  /** The database (a Kysely instance, a pg pool or client, or a `SqlExecutor`). */
  readonly db: TransactionLike;
  /** Ages the template cache. */
  readonly clock: Clock;
  /**
   * How long the newest version of a template is cached (ms). 0 disables caching. Default 5 s:
   * a fixed template reaches sends within 5 s. Pinned versions never change and are cached
   * without expiry (at most `templateCacheSize` entries). Opt-outs are never cached.
   */
  readonly templateCacheMs?: number;
  readonly templateCacheSize?: number;
  /**
   * Opt-out checks of concurrently prepared notifications share one query (`suppressionMatchMany`),
   * up to this many per query. Default 256; 1 checks each with its own query. Never cached: each
   * check's query is sent after the check was asked for.
   */
  readonly suppressionBatchSize?: number;
}

interface CacheEntry {
  readonly template: TemplateRecord | null;
  readonly until: number;
}

/** Removes line breaks from a subject: a header value cannot hold them (and must not be made to). */
function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ').trim();
}

/** What a provider is handed, all fields in one order (no spread: a drain profile showed the spread's copy). */
function deliveryOf(
  notification: DeliveryNotification,
  attempt: number,
  subject: string | null,
  body: string,
  html: string | null,
): Delivery {
  return {
    id: notification.id,
    tenantId: notification.tenant_id,
    channel: notification.channel,
    to: notification.recipient,
    data: notification.data,
    metadata: notification.metadata ?? {},
    attempt,
    createdAt: new Date(notification.created_at),
    subject,
    body,
    html,
  };
}

/**
 * The content port's implementation (see content.ts):
 * 1. opt-outs: a `suppressions` row for (tenant, channel, recipient, '*' or the category) →
 *    `suppressed`, with the row's category and reason; checked on every attempt, never cached
 *    (the checks of concurrently prepared notifications share one query, sent after they were asked for),
 *    unless the caller passes the answer it read with the notification (the dispatcher's read does);
 * 2. content: `body` passes through; a `template` is loaded (pinned version, else the newest),
 *    must be for the notification's channel, and is rendered with the notification's `data`:
 *    subject and text body as text, the email HTML alternative HTML-escaped. A missing
 *    template, version or variable is `permanent` with an error that names it.
 */
export function createContentPreparer(deps: ContentPreparerDeps): ContentPreparer {
  const db = toExecutor(deps.db);
  const cacheMs = deps.templateCacheMs ?? 5_000;
  const cacheSize = deps.templateCacheSize ?? 1_000;
  const cache = new Map<string, CacheEntry>();
  /** Template loads under way: concurrent misses of one key share one query. */
  const loading = new Map<string, Promise<TemplateRecord | null>>();
  const suppressions = createBatchLoader<SuppressionMatchParams, SuppressionRecord | null>({
    loadMany: (checks) => suppressionMatchMany(db, { checks }),
    maxBatch: deps.suppressionBatchSize ?? 256,
    delayMs: 0,
    keyOf: (c) => JSON.stringify([c.tenantId, c.channel, c.recipient, c.category]),
  });

  async function loadTemplate(tenantId: string, name: string, version: number | null): Promise<TemplateRecord | null> {
    const key = JSON.stringify([tenantId, name, version]);
    const now = deps.clock.now().getTime();
    const hit = cache.get(key);
    if (hit && hit.until > now) return hit.template;
    // Only when caching is on: with it off, every load must be a query sent after it was asked for.
    const shared = cacheMs > 0 ? loading.get(key) : undefined;
    if (shared) return shared;
    const load = templateGet(db, { tenantId, name, version }).then((template) => {
      const ttl = version !== null && template !== null ? Number.POSITIVE_INFINITY : cacheMs;
      if (ttl > 0) {
        cache.delete(key);
        cache.set(key, { template, until: now + ttl });
        if (cache.size > cacheSize) cache.delete(cache.keys().next().value!);
      }
      return template;
    });
    if (cacheMs > 0) loading.set(key, load);
    try {
      return await load;
    } finally {
      if (loading.get(key) === load) loading.delete(key);
    }
  }

  return {
    async prepare(notification: DeliveryNotification, attempt: number, checked?: SuppressionRecord | null): Promise<Prepared> {
      const optOut =
        checked !== undefined
          ? checked
          : await suppressions.load({
              tenantId: notification.tenant_id,
              channel: notification.channel,
              recipient: notification.recipient,
              category: notification.category,
            });
      if (optOut) {
        const scope =
          optOut.category === '*'
            ? `every ${notification.channel} message`
            : `${notification.channel} messages of category "${optOut.category}"`;
        return { kind: 'suppressed', reason: `the recipient opted out of ${scope}${optOut.reason ? ` (${optOut.reason})` : ''}` };
      }

      if (notification.template === null) {
        return { kind: 'ready', delivery: deliveryOf(notification, attempt, notification.subject, notification.body ?? '', null) };
      }

      const name = notification.template;
      const pinned = notification.template_version;
      const template = await loadTemplate(notification.tenant_id, name, pinned);
      const label = `template "${name}"${pinned !== null ? ` version ${pinned}` : ''}`;
      if (!template) return { kind: 'permanent', error: `${label} not found for tenant ${notification.tenant_id}` };
      const which = `template "${name}" v${template.version}`;
      if (template.channel !== notification.channel) {
        return { kind: 'permanent', error: `${which} is for the ${template.channel} channel, not ${notification.channel}` };
      }
      const problems: string[] = [];
      const render = (field: string, source: string | null, mode: 'text' | 'html'): string | null => {
        if (source === null) return null;
        const result = renderTemplate(source, notification.data, mode);
        if (result.ok) return result.text;
        problems.push(`${field}: ${result.error}`);
        return null;
      };
      const subject = notification.subject ?? render('subject', template.subject, 'text');
      const body = render('body', template.body, 'text');
      const html = notification.channel === 'email' ? render('html_body', template.htmlBody, 'html') : null;
      if (problems.length > 0) return { kind: 'permanent', error: `${which} cannot be rendered: ${problems.join('; ')}` };
      return { kind: 'ready', delivery: deliveryOf(notification, attempt, subject === null ? null : oneLine(subject), body ?? '', html) };
    },
  };
}
