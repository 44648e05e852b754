import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * `fetch` as a well-behaved client of the API does it: a 503 `overloaded` answer (the API sheds on
 * event-loop delay, NOTIFY_API_MAX_EVENT_LOOP_DELAY_MS) is sent again after its `Retry-After`,
 * until `deadlineMs` has passed. A `notify start` child on a loaded machine (the chaos suite runs
 * beside the whole test suite) may shed its first requests; a test about something else must not
 * fail on that. Every other answer, 503 `database_unreachable` included, is returned as it is.
 * The request body must be re-sendable (a string, or none).
 */
export async function fetchPastShedding(url: string, init: RequestInit = {}, deadlineMs = 60_000): Promise<Response> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const res = await fetch(url, init);
    if (res.status !== 503 || Date.now() > deadline) return res;
    const text = await res.text();
    const retryAfterS = Number(res.headers.get('retry-after'));
    if (!text.includes('overloaded') || !(retryAfterS > 0)) return new Response(text, { status: res.status, headers: res.headers });
    await new Promise((r) => setTimeout(r, Math.min(retryAfterS * 1000, Math.max(0, deadline - Date.now()))));
  }
}

/**
 * Serves `fetch` (a Hono app's) on a free port of 127.0.0.1 through node:http, request bodies
 * included, for a test that needs an app in its own process over real HTTP (a browser, a child
 * client). `close` ends the connections a client keeps open too.
 */
export async function serveFetch(
  fetch: (request: Request) => Response | Promise<Response>,
): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const request = new Request(`http://${req.headers.host}${req.url}`, {
          method: req.method,
          headers: req.headers as Record<string, string>,
          ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
        });
        const response = await fetch(request);
        res.writeHead(response.status, Object.fromEntries(response.headers));
        res.end(Buffer.from(await response.arrayBuffer()));
      })();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
