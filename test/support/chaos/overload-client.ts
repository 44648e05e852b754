/**
 * The overload scenario's load generator, run as its own process (`node --import tsx`) so that it
 * neither starves nor is starved by the test process, which hosts the receiver and the harness.
 * Argument: the JSON of `OverloadClientParams`. Writes `note <text>` lines while it runs and one
 * `result <json>` line (`OverloadClientResult`) at the end. Plain node:http with a keep-alive
 * agent: the cheapest client Node has, so the generator's own cost stays small.
 */
import http from 'node:http';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';

export interface OverloadClientParams {
  /** The API the calibration measures (its own process, shedding on event-loop delay off) and its /metrics. */
  readonly calibrationUrl: string;
  readonly calibrationMetricsUrl: string;
  /** The API under test and its /metrics. */
  readonly url: string;
  readonly metricsUrl: string;
  readonly key: string;
  readonly receiverUrl: string;
  readonly calibrationMs: number;
  readonly calibrationClients: number;
  readonly factor: number;
  readonly ratePerSec?: number;
  readonly durationMs: number;
  readonly concurrency: number;
  readonly timeoutMs: number;
}

export interface OverloadClientResult {
  capacityPerSec: number;
  calibrationAccepted: number;
  ratePerSec: number;
  offered: number;
  sent: number;
  accepted: number;
  shed: number;
  shedByCode: Record<string, number>;
  shedWithoutRetryAfter: number;
  timeouts: number;
  /** Timeouts whose timer fired more than 1 s late: the generator itself was stalled then. */
  timeoutsWhileGeneratorStalled: number;
  other: Record<string, number>;
  /** Requests sent again after a reset on a reused keep-alive connection the server had just closed (Node's advice for `req.reusedSocket`). */
  resentAfterReset: number;
  maxAnswerMs: number;
  maxAcceptedMs: number;
  maxShedMs: number;
  generatorLoopDelayP99Ms: number;
  generatorLoopDelayMaxMs: number;
  apiCalibrationLoopDelayP99Ms: number;
  apiCalibrationLoopDelayMaxMs: number;
  apiLoopDelayP99Ms: number;
  apiLoopDelayMaxMs: number;
  apiShedByReason: Record<string, number>;
  /** Every accepted notification id (calibration and overload). */
  ids: string[];
}

type Answer =
  | { readonly ms: number; readonly status: number; readonly retryAfter: string | undefined; readonly id?: string; readonly code?: string }
  | { readonly ms: number; readonly error: string; readonly stalledMs?: number };

/**
 * The calibration measures throughput, not latency: its requests wait long for an answer, so that
 * none the API committed goes unaccounted (a notification in the database the audit was not told of).
 */
const CALIBRATION_TIMEOUT_MS = 120_000;
const params = JSON.parse(process.argv[2]!) as OverloadClientParams;
const agent = new http.Agent({ keepAlive: true, maxSockets: params.concurrency });
const note = (text: string) => process.stdout.write(`note ${text}\n`);
let n = 0;

/**
 * One POST /v1/notifications. A timeout gives the poll phase one more turn, so an answer already
 * read off the socket is not counted as one. A reset on a reused keep-alive connection before any
 * answer (the server closed it as idle while the request was on its way) is sent again, once.
 */
async function post(url: string, timeoutMs = params.timeoutMs): Promise<Answer> {
  const i = n++;
  const body = JSON.stringify({ channel: 'webhook', to: `${params.receiverUrl}/hooks/${i % 25}`, body: `overload ${i}` });
  const t0 = performance.now();
  const first = await send(url, body, t0, timeoutMs);
  if (!('retry' in first)) return first;
  r.resentAfterReset++;
  const again = await send(url, body, t0, timeoutMs);
  return 'retry' in again ? { ms: again.ms, error: 'ECONNRESET' } : again;
}

function send(url: string, body: string, t0: number, timeoutMs: number): Promise<Answer | { readonly ms: number; readonly retry: true }> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (a: Answer | { readonly ms: number; readonly retry: true }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(a);
    };
    const req = http.request(url, {
      method: 'POST',
      agent,
      headers: { authorization: `Bearer ${params.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    const timer = setTimeout(() => {
      const stalledMs = performance.now() - t0 - timeoutMs;
      setImmediate(() => {
        if (done) return;
        req.destroy();
        finish({ ms: performance.now() - t0, error: 'timeout', stalledMs });
      });
    }, timeoutMs);
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        let parsed: { id?: string; code?: string } = {};
        try {
          parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof parsed;
        } catch {
          // not JSON: classified by status
        }
        const retryAfter = res.headers['retry-after'];
        finish({ ms: performance.now() - t0, status: res.statusCode ?? 0, retryAfter, ...parsed });
      });
      res.on('error', (err: NodeJS.ErrnoException) => finish({ ms: performance.now() - t0, error: err.code ?? err.name }));
    });
    req.on('error', (err: NodeJS.ErrnoException) =>
      finish(
        err.code === 'ECONNRESET' && req.reusedSocket && !answered
          ? { ms: performance.now() - t0, retry: true }
          : { ms: performance.now() - t0, error: err.code ?? err.name },
      ),
    );
    req.end(body);
  });
}

/** Values of `name` lines of a Prometheus exposition, by their label text. */
function samples(text: string, name: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^(\w+)(\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (m && m[1] === name) out[m[2] ?? ''] = Number(m[3]);
  }
  return out;
}
/** Reads an API's /metrics; prom-client resets its event-loop-lag histogram on each read. */
async function scrape(url: string): Promise<string> {
  return (await fetch(url)).text();
}
const lagMs = (text: string, q: 'p99' | 'max') => Math.round((samples(text, `nodejs_eventloop_lag_${q}_seconds`)[''] ?? 0) * 1000);

const r: OverloadClientResult = {
  capacityPerSec: 0,
  calibrationAccepted: 0,
  ratePerSec: 0,
  offered: 0,
  sent: 0,
  accepted: 0,
  shed: 0,
  shedByCode: {},
  shedWithoutRetryAfter: 0,
  timeouts: 0,
  timeoutsWhileGeneratorStalled: 0,
  other: {},
  resentAfterReset: 0,
  maxAnswerMs: 0,
  maxAcceptedMs: 0,
  maxShedMs: 0,
  generatorLoopDelayP99Ms: 0,
  generatorLoopDelayMaxMs: 0,
  apiCalibrationLoopDelayP99Ms: 0,
  apiCalibrationLoopDelayMaxMs: 0,
  apiLoopDelayP99Ms: 0,
  apiLoopDelayMaxMs: 0,
  apiShedByReason: {},
  ids: [],
};
const bump = (m: Record<string, number>, k: string) => (m[k] = (m[k] ?? 0) + 1);

// 1. Calibration: what the API accepts per second on this machine now (closed loop, like the bench's
// http-enqueue), on an API process of its own without event-loop shedding, as the bench measured it.
await scrape(params.calibrationMetricsUrl);
const calStart = performance.now();
await Promise.all(
  Array.from({ length: params.calibrationClients }, async () => {
    while (performance.now() - calStart < params.calibrationMs) {
      const a = await post(params.calibrationUrl, CALIBRATION_TIMEOUT_MS);
      if ('status' in a && a.status === 202 && a.id) {
        r.calibrationAccepted++;
        r.ids.push(a.id);
      }
    }
  }),
);
r.capacityPerSec = Math.max(1, Math.round(r.calibrationAccepted / ((performance.now() - calStart) / 1000)));
r.ratePerSec = params.ratePerSec ?? Math.round(params.factor * r.capacityPerSec);
const calibrated = await scrape(params.calibrationMetricsUrl);
r.apiCalibrationLoopDelayP99Ms = lagMs(calibrated, 'p99');
r.apiCalibrationLoopDelayMaxMs = lagMs(calibrated, 'max');
note(
  `calibration: ${r.calibrationAccepted} accepted in ${params.calibrationMs} ms by ${params.calibrationClients} clients = ${r.capacityPerSec}/s; ` +
    `API event-loop delay p99/max ${r.apiCalibrationLoopDelayP99Ms}/${r.apiCalibrationLoopDelayMaxMs} ms`,
);

// 2. Overload: open loop at ratePerSec, at most `concurrency` requests open, on the API under test.
await scrape(params.metricsUrl);
note(`offering ${r.ratePerSec}/s for ${params.durationMs} ms`);
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();
const open = new Set<Promise<void>>();
const classify = (a: Answer) => {
  r.maxAnswerMs = Math.max(r.maxAnswerMs, Math.round(a.ms));
  if ('error' in a) {
    if (a.error !== 'timeout') bump(r.other, a.error);
    else {
      r.timeouts++;
      if ((a.stalledMs ?? 0) > 1_000) r.timeoutsWhileGeneratorStalled++;
    }
  } else if (a.status === 202 && a.id) {
    r.accepted++;
    r.ids.push(a.id);
    r.maxAcceptedMs = Math.max(r.maxAcceptedMs, Math.round(a.ms));
  } else if (a.status === 503 || a.status === 429) {
    r.shed++;
    bump(r.shedByCode, a.code ?? String(a.status));
    r.maxShedMs = Math.max(r.maxShedMs, Math.round(a.ms));
    if (!a.retryAfter) r.shedWithoutRetryAfter++;
  } else bump(r.other, String(a.status));
};
const start = performance.now();
await new Promise<void>((resolve) => {
  const tick = setInterval(() => {
    const elapsed = performance.now() - start;
    if (elapsed >= params.durationMs) {
      clearInterval(tick);
      resolve();
      return;
    }
    r.offered = Math.floor((elapsed / 1000) * r.ratePerSec);
    while (r.sent < r.offered && open.size < params.concurrency) {
      r.sent++;
      const p = post(params.url).then(classify);
      open.add(p);
      void p.finally(() => open.delete(p));
    }
  }, 10);
});
await Promise.all(open);
loop.disable();
r.generatorLoopDelayP99Ms = Math.round(loop.percentile(99) / 1e6);
r.generatorLoopDelayMaxMs = Math.round(loop.max / 1e6);
const after = await scrape(params.metricsUrl);
r.apiLoopDelayP99Ms = lagMs(after, 'p99');
r.apiLoopDelayMaxMs = lagMs(after, 'max');
for (const [labels, v] of Object.entries(samples(after, 'notify_api_requests_shed_total'))) {
  r.apiShedByReason[/reason="([^"]*)"/.exec(labels)?.[1] ?? labels] = v;
}
agent.destroy();
process.stdout.write(`result ${JSON.stringify(r)}\n`);
