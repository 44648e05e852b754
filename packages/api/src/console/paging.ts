import { html } from 'hono/html';
import type { Html } from './layout.js';

/** Where a keyset page starts: after `key` in list order (`next`), or before it (`previous`). */
export interface KeysetCursor<K> {
  readonly key: K;
  readonly toward: 'next' | 'previous';
}

/** A page in list order, and whether the list goes on either side of it. */
export interface KeysetPage<T> {
  readonly rows: T[];
  readonly next: boolean;
  readonly previous: boolean;
}

/**
 * A keyset page from the rows read in the direction of travel (`limit` + 1 asked: one more means
 * the list goes on that way) and whether a row lies behind the cursor. A `previous` page is read
 * in reverse list order, so it is turned around.
 */
export function keysetPage<T>(read: readonly T[], limit: number, toward: 'next' | 'previous', behind: boolean): KeysetPage<T> {
  const rows = read.slice(0, limit);
  const more = read.length > limit;
  return toward === 'next' ? { rows, next: more, previous: behind } : { rows: rows.reverse(), next: behind, previous: more };
}

/** The cursor of a list URL: `?cursor=` goes on from a row (as before), `?prev=` back from one. */
export function cursorParam(query: Record<string, string>): { token: string; toward: 'next' | 'previous' } | undefined {
  if (query.prev) return { token: query.prev, toward: 'previous' };
  if (query.cursor) return { token: query.cursor, toward: 'next' };
  return undefined;
}

/** A LIKE pattern matching what starts with `prefix` (its `%`, `_` and `\` taken literally). */
export function likePrefix(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, '\\$&')}%`;
}

/** A list's URL with its query parameters (none: the bare path). */
export function listUrl(base: string, query: URLSearchParams): string {
  return query.size > 0 ? `${base}?${query.toString()}` : base;
}

/** The "previous" and "next" links of a paged list; `keep` holds the list's other query parameters. */
export function pagerLinks(
  base: string,
  keep: URLSearchParams,
  tokens: { previous?: string | undefined; next?: string | undefined },
  labels: { previous: string; next: string },
): Html | string {
  if (tokens.previous === undefined && tokens.next === undefined) return '';
  const href = (param: string, token: string) => {
    const q = new URLSearchParams(keep);
    q.set(param, token);
    return listUrl(base, q);
  };
  return html`<nav aria-label="Pages" class="pager">
    ${tokens.previous !== undefined ? html`<a href="${href('prev', tokens.previous)}" rel="prev">${labels.previous}</a>` : ''}
    ${tokens.next !== undefined ? html`<a href="${href('cursor', tokens.next)}" rel="next">${labels.next}</a>` : ''}
  </nav>`;
}
