import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { Hono, type MiddlewareHandler } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { html } from 'hono/html';
import { hashApiKey, hashesEqual } from '../api-key.js';
import { apiKeyFindByHash } from '../sql/api-key-find-by-hash.js';
import type { ConsoleDeps, ConsoleEnv } from './context.js';
import { backLink, invalidIf, layout } from './layout.js';
import { consoleSessionDelete, consoleSessionGet, consoleSessionInsert } from './session-store.js';

/** The session cookie. */
const SESSION_COOKIE = 'notify_console';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

function isTls(url: string, forwardedProto: string | undefined): boolean {
  return new URL(url).protocol === 'https:' || forwardedProto === 'https';
}

/**
 * Where a sign-in may lead back to: a console page of this site (a path under /console/, not the
 * sign-in or sign-out itself), never another site. Anything else is no return path.
 */
function returnPath(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > 2000) return undefined;
  return /^\/console\/(?!log(?:in|out)\b)[^\s\\]*$/.test(value) ? value : undefined;
}

/** The console page a request without a live session came from: its own URL for a GET, else its Referer's. */
function pageOf(method: string, url: string, referer: string | undefined): string | undefined {
  try {
    const u = method === 'GET' ? new URL(url) : referer ? new URL(referer) : undefined;
    return u ? returnPath(`${u.pathname}${u.search}`) : undefined;
  } catch {
    return undefined;
  }
}

function loginPage(error?: string, opts: { readonly ended?: boolean; readonly next?: string } = {}) {
  return layout(
    { title: 'Sign in', error },
    html`${
        opts.ended
          ? html`<p class="notice" role="status">
              Your session has ended: it expired, or a sign-out or the revocation of its key ended it. Sign in
              again${opts.next ? ' to go back to the page you were on' : ''}; a form sent after it ended was not saved.
            </p>`
          : ''
      }
      <form method="post" action="/console/login">
        ${opts.next ? html`<input type="hidden" name="next" value="${opts.next}" />` : ''}
        <p>
          <label for="api_key">API key</label><br /><input
            id="api_key"
            name="api_key"
            type="password"
            autocomplete="off"
            required
            size="50"
            ${invalidIf(error !== undefined)}
          />
        </p>
        <p><button type="submit">Sign in</button></p>
        <p class="muted">The key is exchanged for a session cookie (HttpOnly, SameSite=Strict); it is not stored in the browser.</p>
      </form>`,
  );
}

/**
 * Whether a sign-in request comes from the console's own page: `Sec-Fetch-Site: same-origin`
 * where the browser sends it; without it, an Origin whose host is the request's own (a request
 * with neither, not from a browser's cross-site form, is let through).
 */
function sameOrigin(fetchSite: string | undefined, origin: string | undefined, host: string | undefined): boolean {
  if (fetchSite !== undefined) return fetchSite === 'same-origin' || fetchSite === 'none';
  if (origin === undefined) return true;
  try {
    return host !== undefined && new URL(origin).host === host;
  } catch {
    return false; // "null" (a sandboxed or privacy-sensitive context)
  }
}

/** GET/POST /console/login and POST /console/logout. */
export function authRoutes(deps: ConsoleDeps): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();
  app.get('/login', (c) => c.html(loginPage(undefined, { ended: c.req.query('ended') === '1', next: returnPath(c.req.query('next')) })));
  app.post('/login', async (c) => {
    // Another site's page must not sign this browser in with its key (login CSRF: the next pages
    // would show that tenant's data, and take actions there). SameSite stops sending a cookie, not
    // setting one; browsers say where a request comes from in Sec-Fetch-Site, older ones in Origin.
    if (!sameOrigin(c.req.header('sec-fetch-site'), c.req.header('origin'), c.req.header('x-forwarded-host') ?? c.req.header('host'))) {
      return c.html(loginPage('Sign in from this console’s own page.'), 403);
    }
    const form = await c.req.parseBody();
    const next = returnPath(form.next);
    const key = typeof form.api_key === 'string' ? form.api_key.trim() : '';
    const hash = hashApiKey(key);
    const found = key ? await apiKeyFindByHash(deps.exec, { keyHash: hash }) : undefined;
    if (!found || !hashesEqual(found.key_hash, hash) || found.revoked_at !== null) {
      return c.html(loginPage('That API key is not valid.', { next }), 401);
    }
    const token = randomBytes(32).toString('base64url');
    const now = deps.clock.now();
    await consoleSessionInsert(deps.exec, {
      tokenHash: sha256(token),
      tenantId: found.tenant_id,
      apiKeyId: found.id,
      csrfToken: randomBytes(24).toString('base64url'),
      now,
      expiresAt: new Date(now.getTime() + deps.sessionTtlMs),
    });
    setCookie(c, SESSION_COOKIE, token, {
      httpOnly: true,
      sameSite: 'Strict',
      secure: isTls(c.req.url, c.req.header('x-forwarded-proto')),
      path: '/console',
      maxAge: Math.floor(deps.sessionTtlMs / 1000),
    });
    deps.logger.info({ tenantId: found.tenant_id, apiKeyId: found.id }, 'console sign-in');
    return c.redirect(next ?? '/console/notifications', 303);
  });
  return app;
}

/** Requires a live session (else to the sign-in page) and, on every POST, the session's CSRF token. */
export function requireSession(deps: ConsoleDeps): MiddlewareHandler<ConsoleEnv> {
  return async (c, next) => {
    const token = getCookie(c, SESSION_COOKIE);
    const session = token ? await consoleSessionGet(deps.exec, { tokenHash: sha256(token), now: deps.clock.now() }) : undefined;
    if (!session) {
      // Back to the sign-in page, which says a session ended (a cookie came, but no live session:
      // expired, signed out elsewhere, its key revoked) and leads back to the page afterwards.
      const q = new URLSearchParams();
      if (token) {
        q.set('ended', '1');
        deleteCookie(c, SESSION_COOKIE, { path: '/console' });
      }
      const next = pageOf(c.req.method, c.req.url, c.req.header('referer'));
      if (next) q.set('next', next);
      const query = q.toString();
      return c.redirect(query ? `/console/login?${query}` : '/console/login', 303);
    }
    c.set('session', session);
    if (c.req.method === 'POST') {
      const form = await c.req.parseBody();
      const sent = typeof form._csrf === 'string' ? Buffer.from(form._csrf) : Buffer.alloc(0);
      const want = Buffer.from(session.csrfToken);
      if (sent.length !== want.length || !timingSafeEqual(sent, want)) {
        return c.html(
          layout(
            { title: 'Refused', error: 'The form was missing its security token. Reload the page and try again.' },
            backLink(c.req.header('referer')),
          ),
          403,
        );
      }
    }
    await next();
  };
}

/** POST /console/logout: ends the session (behind requireSession, so it needs the CSRF token). */
export function logoutRoute(deps: ConsoleDeps): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();
  app.post('/logout', async (c) => {
    const token = getCookie(c, SESSION_COOKIE);
    if (token) await consoleSessionDelete(deps.exec, { tokenHash: sha256(token) });
    deleteCookie(c, SESSION_COOKIE, { path: '/console' });
    return c.redirect('/console/login', 303);
  });
  return app;
}
