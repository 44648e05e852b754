import type { LookupFunction } from 'node:net';
import { Agent, type Dispatcher } from 'undici';

/**
 * The error `httpPost` rejects with when its `timeoutMs` ran out (name `TimeoutError`, as
 * `AbortSignal.timeout`'s reason).
 */
export class HttpTimeoutError extends Error {
  override readonly name = 'TimeoutError';
  constructor(ms: number) {
    super(`the request timed out after ${ms} ms`);
  }
}

/** Open connections per origin of an HTTP adapter's pool when its options name none (NOTIFY_HTTP_CONNECTIONS_PER_ORIGIN's default). */
export const DEFAULT_CONNECTIONS_PER_ORIGIN = 64;

/** Options of `createHttpAgent`. */
export interface HttpAgentOptions {
  /**
   * Open connections per origin (scheme, host and port) at most. A POST that finds them all busy
   * waits for one; the wait counts toward its attempt's signal.
   */
  readonly connectionsPerOrigin: number;
  /** Name resolution of every new connection (the SSRF guard's checked lookup). */
  readonly lookup?: LookupFunction;
}

/**
 * A keep-alive connection pool for `httpPost`: an undici `Agent` with one pool per origin, at
 * most `connectionsPerOrigin` connections each, no pipelining (one request at a time per
 * connection, as node:http), an idle connection closed after 4 s, or 2 s before the receiver's
 * own `Keep-Alive: timeout` hint runs out when it sends one (undici's defaults). undici hands a
 * connection its next request one event-loop turn after an answer (in case the receiver closes
 * it), so back-to-back POSTs to one origin alternate between two connections when the limit
 * allows. Connections are only reused for the origin that opened them, so a connection checked
 * by `lookup` for one host never carries another host's request. `destroy()` closes every
 * connection at once.
 */
export function createHttpAgent(options: HttpAgentOptions): Dispatcher {
  return new Agent({
    connections: options.connectionsPerOrigin,
    pipelining: 1,
    // The attempt's signal is the only deadline once connected (per attempt and on shutdown), as
    // it was with node:http; undici's own 300 s header and body timers would never fire first.
    headersTimeout: 0,
    bodyTimeout: 0,
    // undici passes these to net.connect / tls.connect: the checked lookup decides the address.
    connect: options.lookup ? { lookup: options.lookup } : {},
  });
}

/** One POST, as the webhook and SMS adapters send it. */
export interface HttpPostRequest {
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** Aborts the request (waiting for a connection, connect, send or read). */
  readonly signal: AbortSignal;
  /**
   * Ends the request like `signal` does, this long after the call, rejecting with an
   * `HttpTimeoutError`. A timer of the call's own rather than a second signal: an attempt used to
   * make an AbortController, its signal and a listener on the caller's signal for this, 2.5 KB of
   * the 72 KB the service allocated per notification in a drain (docs/providers.md).
   */
  readonly timeoutMs?: number;
  /** The connection pool (`createHttpAgent`); its `lookup` resolves the host of every new connection. */
  readonly agent: Dispatcher;
  /** At most this many bytes of the response body are kept; the rest is not read. */
  readonly maxResponseBytes: number;
}

/** Response headers: names lower-cased, a repeated header as an array. */
export type HttpResponseHeaders = Readonly<Record<string, string | string[] | undefined>>;

/**
 * The answer. `body` holds at most `maxResponseBytes`; `truncated` says the body is not whole: it
 * was longer, or it was cut off (a reset, the signal or `timeoutMs`) after the status arrived.
 */
export interface HttpPostResponse {
  readonly status: number;
  readonly headers: HttpResponseHeaders;
  readonly body: Buffer;
  readonly truncated: boolean;
}

/**
 * undici's codes for failures that node:http reported with an errno, mapped to that errno so
 * that `providerStatus` and the classification tables see what they saw before:
 * - the receiver closed the connection before the response ended (node:http: "socket hang up");
 * - the connection did not open within undici's connect timeout (10 s);
 * - the pool was destroyed under the request (provider closed at shutdown).
 * Socket errors with an errno of their own (ECONNREFUSED, ENOTFOUND…) and parser errors
 * (HPE_…) reach the caller as they are.
 */
const UNDICI_ERRNOS: Readonly<Record<string, string>> = {
  UND_ERR_SOCKET: 'ECONNRESET',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'ECONNRESET',
  UND_ERR_CONNECT_TIMEOUT: 'ETIMEDOUT',
  UND_ERR_HEADERS_TIMEOUT: 'ETIMEDOUT',
  UND_ERR_BODY_TIMEOUT: 'ETIMEDOUT',
  UND_ERR_DESTROYED: 'ECONNABORTED',
  UND_ERR_CLOSED: 'ECONNABORTED',
};

function withErrno(err: Error): Error {
  const code = (err as { code?: unknown }).code;
  const errno = typeof code === 'string' ? UNDICI_ERRNOS[code] : undefined;
  return errno === undefined ? err : Object.assign(new Error(`${err.message} (${errno})`, { cause: err }), { code: errno });
}

function abortError(): Error {
  return Object.assign(new Error('the request was aborted'), { name: 'AbortError', code: 'ABORT_ERR' });
}

/**
 * POSTs through `agent` (undici). Redirects are never followed (the caller classifies 3xx).
 * Rejects with the socket's error (its `code` is the errno; undici's own socket codes are mapped
 * to the errno node:http gave, see UNDICI_ERRNOS), an `AbortError` as soon as `signal` aborts or
 * an `HttpTimeoutError` once `timeoutMs` has passed, even while the request waits for a
 * connection. Reads at most `maxResponseBytes` of the answer and then destroys the connection, so
 * a hostile receiver cannot make us buffer without limit. Once the answer's status and headers have
 * arrived it resolves, `truncated`, also when its body then fails or is still arriving when the
 * signal or `timeoutMs` ends it (the connection is destroyed): the status is the receiver's verdict.
 */
export function httpPost(request: HttpPostRequest): Promise<HttpPostResponse> {
  const { url, signal, maxResponseBytes } = request;
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(abortError());
      return;
    }
    let controller: Dispatcher.DispatchController | null = null;
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    let status = 0;
    let headers: HttpResponseHeaders = {};
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      clearTimeout(timer);
      return true;
    };
    const finish = (truncated: boolean) => {
      if (settle()) resolve({ status, headers, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), truncated });
    };
    // Once the status has arrived it is the answer, whatever then ends the body (a reset, the
    // signal, timeoutMs): a webhook answered 200 was accepted, and failing it would send it again.
    const fail = (err: Error) => {
      if (status !== 0) finish(true);
      else if (settle()) reject(err);
    };
    // undici drops a request that waits for a connection only once it gets one; settle at once.
    const end = (err: Error) => {
      fail(err);
      controller?.abort(err);
    };
    function onAbort() {
      end(abortError());
    }
    signal.addEventListener('abort', onAbort, { once: true });
    const { timeoutMs } = request;
    if (timeoutMs !== undefined) timer = setTimeout(() => end(new HttpTimeoutError(timeoutMs)), timeoutMs);
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        // Aborted while it waited: throwing here fails the request before a byte is written and
        // keeps the connection (controller.abort would destroy it).
        if (settled) throw abortError();
        controller = c;
      },
      onResponseStart(_c, statusCode, responseHeaders) {
        // 1xx answers (100 Continue, 103 Early Hints) precede the real one.
        if (statusCode < 200) return;
        status = statusCode;
        headers = responseHeaders;
      },
      onResponseData(c, chunk) {
        if (settled) return;
        const room = maxResponseBytes - size;
        if (chunk.length > room) {
          if (room > 0) chunks.push(chunk.subarray(0, room));
          size = maxResponseBytes;
          finish(true);
          // Stop reading: aborting a response destroys its connection; the rest is never buffered.
          c.abort(abortError());
          return;
        }
        chunks.push(chunk);
        size += chunk.length;
      },
      onResponseEnd() {
        finish(false);
      },
      onResponseError(_c, err) {
        fail(withErrno(err));
      },
    };
    try {
      request.agent.dispatch(
        { origin: url.origin, path: url.pathname + url.search, method: 'POST', headers: request.headers, body: request.body },
        handler,
      );
    } catch (err) {
      fail(withErrno(err as Error));
    }
  });
}
