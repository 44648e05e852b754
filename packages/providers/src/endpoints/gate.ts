import { toExecutor, type TransactionLike } from '@notify/outbox';
import { type Clock, type Logger, errorMessage, onAbort } from '@notify/runtime';
import type { SendResult } from '../provider.js';
import type { RateLimit } from '../rate-limit.js';
import { type EndpointState, type EndpointTarget, endpointId } from './endpoint.js';
import { parseRateLimit } from './rate-limit-text.js';
import { endpointClaimProbe } from './sql/endpoint-claim-probe.js';
import { endpointGetMany } from './sql/endpoint-get-many.js';
import { type EndpointResultSummary, endpointRecordResults } from './sql/endpoint-record-results.js';
import { deliveryRateBucketsTake } from './sql/delivery-rate-buckets-take.js';

/** The endpoint-health settings (docs/endpoints.md). */
export interface EndpointHealthConfig {
  /** Consecutive transient failures that open an endpoint's circuit (NOTIFY_ENDPOINT_FAILURE_THRESHOLD, default 5). */
  readonly failureThreshold: number;
  /**
   * The streak opens the circuit only if transient failures are also at least this share of the
   * endpoint's recent answers (NOTIFY_ENDPOINT_FAILURE_RATIO, default 0.5; 0: the streak alone).
   */
  readonly failureRatio?: number;
  /** How long an open circuit waits before it lets one probe through (NOTIFY_ENDPOINT_COOLDOWN, default 10 s). */
  readonly cooldownMs: number;
  /** A failure streak this long disables the endpoint (NOTIFY_ENDPOINT_DISABLE_AFTER, default 5 days). */
  readonly disableAfterMs: number;
  /** Default rate limit of every endpoint (NOTIFY_ENDPOINT_RATE_LIMIT); an endpoint's own override wins. Undefined = none. */
  readonly endpointRateLimit: RateLimit | undefined;
  /** Default rate limit of every tenant's deliveries (NOTIFY_TENANT_RATE_LIMIT); `tenants.delivery_rate_limit` wins. */
  readonly tenantRateLimit: RateLimit | undefined;
  /** A delivery waits for a rate-limit token this long at most, then it is rescheduled (default 1 s). */
  readonly maxRateWaitMs?: number;
  /** How long a dispatcher trusts what it read of an endpoint (default 1 s). */
  readonly stateTtlMs?: number;
  /** Results are written in groups this often (default 50 ms). */
  readonly flushDelayMs?: number;
}

/** Whether an attempt may go to an endpoint now. */
export type Admission =
  /** Go; `probe` when this attempt is the single probe of an open circuit. */
  | { readonly kind: 'go'; readonly probe: boolean }
  /** Not now: the circuit is open or the rate limit is spent; try again at `until` (no attempt spent). */
  | { readonly kind: 'later'; readonly until: Date; readonly reason: 'circuit_open' | 'rate_limited' }
  /** The endpoint is disabled: the notification ends dead (`endpoint_disabled`). */
  | { readonly kind: 'disabled' };

/**
 * Endpoint health, shared by every dispatcher process through PostgreSQL (`endpoints`,
 * `delivery_rate_buckets`): the circuit breaker, auto-disable and the per-tenant and
 * per-endpoint rate limits. Built to stay off the per-delivery round trip: endpoint state is
 * cached for `stateTtlMs`, rate-limit tokens are taken several at a time, results are written in
 * groups.
 */
export interface EndpointGate {
  /** Call before an attempt, outside its timeout. Resolves `later` at once when `signal` aborts while waiting. */
  admit(target: EndpointTarget, signal: AbortSignal): Promise<Admission>;
  /** Call with the provider's answer; written with the next group. */
  observe(target: EndpointTarget, result: SendResult): void;
  /** Writes the results observed so far. */
  flush(): Promise<void>;
}

interface CachedState {
  readonly state: EndpointState;
  readonly probeAt: Date | null;
  readonly endpointLimit: RateLimit | undefined;
  readonly tenantLimit: RateLimit | undefined;
  readonly loadedAt: number;
}

interface LocalBucket {
  tokens: number;
  /** Locally held tokens are dropped after this instant (ms), so a process cannot hoard a burst. */
  expiresAt: number;
  /** The shared bucket is empty until about then (ms). */
  emptyUntil: number;
  refill: Promise<void> | undefined;
}

/** NOTIFY_ENDPOINT_FAILURE_RATIO's default: a streak opens the circuit when at least half of the recent answers failed. */
export const DEFAULT_FAILURE_RATIO = 0.5;

const LOCAL_TOKEN_LIFETIME_MS = 1_000;
// A take asks for about 100 ms worth of tokens: at 50/s that is 5, so two processes make about
// 10 statements a second each instead of one per delivery; the limit itself is exact (the tokens
// come out of the shared bucket), unused local tokens only lower the throughput a little.
const TAKE_WINDOW_S = 0.1;

/** Builds the gate. `db` is a pool (each statement on its own, autocommit). */
export function createEndpointGate(
  config: EndpointHealthConfig,
  deps: { readonly db: TransactionLike; readonly clock: Clock; readonly logger: Logger },
): EndpointGate {
  const db = toExecutor(deps.db);
  const { clock, logger } = deps;
  const ttlMs = config.stateTtlMs ?? 1_000;
  const maxWaitMs = config.maxRateWaitMs ?? 1_000;
  const flushDelayMs = config.flushDelayMs ?? 50;
  const states = new Map<string, CachedState>();
  const loading = new Map<string, Promise<CachedState>>();
  const buckets = new Map<string, LocalBucket>();
  const pending = new Map<string, EndpointResultSummary>();
  /** Endpoints whose rows a write of this gate returned: later writes do not create them again. */
  const known = new Set<string>();
  let flushTimer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();

  const parseOverride = (raw: string | null, fallback: RateLimit | undefined): RateLimit | undefined => {
    if (raw === null) return fallback;
    try {
      return parseRateLimit(raw);
    } catch {
      return fallback; // the API validates overrides; a hand-written bad one falls back to the default
    }
  };

  const stateOf = async (id: string, tenantId: string): Promise<CachedState> => {
    const cached = states.get(id);
    if (cached && clock.now().getTime() - cached.loadedAt < ttlMs) return cached;
    let load = loading.get(id);
    if (!load) {
      load = (async () => {
        const [row] = await endpointGetMany(db, { ids: [id], tenantIds: [tenantId] });
        const s: CachedState = {
          state: row?.state ?? 'ok',
          probeAt: row?.probe_at ? new Date(row.probe_at) : null,
          endpointLimit: parseOverride(row?.rate_limit ?? null, config.endpointRateLimit),
          tenantLimit: parseOverride(row?.tenant_rate_limit ?? null, config.tenantRateLimit),
          loadedAt: clock.now().getTime(),
        };
        states.set(id, s);
        return s;
      })().finally(() => loading.delete(id));
      loading.set(id, load);
    }
    return load;
  };

  const setState = (id: string, state: EndpointState, probeAt: Date | null) => {
    const cached = states.get(id);
    if (cached) states.set(id, { ...cached, state, probeAt });
  };

  /** Takes one token from each bucket, waiting up to `maxWaitMs`; returns when to come back if it could not. */
  const takeTokens = async (specs: { bucket: string; limit: RateLimit }[], signal: AbortSignal): Promise<Date | undefined> => {
    const deadline = clock.now().getTime() + maxWaitMs;
    for (;;) {
      const now = clock.now().getTime();
      const local = specs.map((s) => {
        let b = buckets.get(s.bucket);
        if (!b) buckets.set(s.bucket, (b = { tokens: 0, expiresAt: 0, emptyUntil: 0, refill: undefined }));
        if (b.expiresAt <= now) b.tokens = 0;
        return { ...s, b };
      });
      if (local.every((l) => l.b.tokens >= 1)) {
        for (const l of local) l.b.tokens -= 1;
        return undefined;
      }
      const missing = local.filter((l) => l.b.tokens < 1);
      const askNow = missing.filter((l) => !l.b.refill && l.b.emptyUntil <= now);
      if (askNow.length > 0) {
        const refill = (async () => {
          const taken = await deliveryRateBucketsTake(db, {
            now: clock.now(),
            buckets: askNow.map((l) => ({
              bucket: l.bucket,
              perSecond: l.limit.perSecond,
              burst: l.limit.burst,
              want: Math.max(1, Math.min(Math.ceil(l.limit.perSecond * TAKE_WINDOW_S), Math.floor(l.limit.burst))),
            })),
          });
          const at = clock.now().getTime();
          taken.forEach((t, i) => {
            const l = askNow[i]!;
            if (l.b.expiresAt <= at) l.b.tokens = 0;
            l.b.tokens += t.granted;
            l.b.expiresAt = at + LOCAL_TOKEN_LIFETIME_MS;
            // Empty: the next whole token is back in (1 − tokens) / rate.
            l.b.emptyUntil = t.granted > 0 ? 0 : at + Math.max(1, Math.ceil(((1 - t.tokens) / l.limit.perSecond) * 1000));
          });
        })();
        const settled: Promise<void> = refill
          .catch((err: unknown) => {
            // The database did not answer: treat the buckets as empty for a second (the delivery
            // is put off) instead of asking again at once.
            logger.warn({ err: errorMessage(err) }, 'endpoint health: taking rate-limit tokens failed');
            for (const l of askNow) l.b.emptyUntil = clock.now().getTime() + 1_000;
          })
          .finally(() => {
            for (const l of askNow) if (l.b.refill === settled) l.b.refill = undefined;
          });
        for (const l of askNow) l.b.refill = settled;
      }
      const refills = missing.flatMap((l) => (l.b.refill ? [l.b.refill] : []));
      if (refills.length > 0) {
        await Promise.all(refills);
        continue;
      }
      const until = Math.max(...missing.map((l) => l.b.emptyUntil));
      if (until > deadline) return new Date(until);
      if (!(await sleep(until - clock.now().getTime(), signal))) return new Date(until);
    }
  };

  const flush = async (): Promise<void> => {
    clearTimeout(flushTimer);
    flushTimer = undefined;
    if (pending.size === 0) return flushing;
    const results = [...pending.values()];
    pending.clear();
    const write = flushing.then(async () => {
      try {
        const rows = await endpointRecordResults(db, {
          results,
          now: clock.now(),
          // 0 turns the circuit breaker off (auto-disable still counts the streak).
          failureThreshold: config.failureThreshold > 0 ? config.failureThreshold : 2 ** 31 - 1,
          failureRatio: config.failureRatio ?? DEFAULT_FAILURE_RATIO,
          cooldownMs: config.cooldownMs,
          disableAfterMs: config.disableAfterMs,
          known,
        });
        if (known.size > 10_000) known.clear();
        for (const r of rows) {
          known.add(r.id);
          setState(r.id, r.state, r.probe_at ? new Date(r.probe_at) : null);
        }
      } catch (err) {
        // Losing one group of health results delays a circuit opening a little; it never loses a delivery.
        logger.warn({ err: errorMessage(err), endpoints: results.length }, 'endpoint health: writing results failed');
      }
    });
    flushing = write;
    return write;
  };

  return {
    async admit(target, signal) {
      const id = endpointId(target);
      const s = await stateOf(id, target.tenantId);
      const now = clock.now();
      let probe = false;
      if (s.state === 'disabled') return { kind: 'disabled' };
      if (s.state === 'open') {
        if (s.probeAt && s.probeAt.getTime() > now.getTime()) return { kind: 'later', until: s.probeAt, reason: 'circuit_open' };
        const claim = await endpointClaimProbe(db, { id, now, cooldownMs: config.cooldownMs });
        if (claim && !claim.claimed) {
          setState(id, 'open', claim.probeAt);
          return { kind: 'later', until: claim.probeAt, reason: 'circuit_open' };
        }
        if (claim) setState(id, 'open', claim.probeAt);
        probe = claim !== undefined;
      }
      const specs: { bucket: string; limit: RateLimit }[] = [];
      if (s.tenantLimit) specs.push({ bucket: `tenant:${target.tenantId}`, limit: s.tenantLimit });
      if (s.endpointLimit) specs.push({ bucket: `endpoint:${id}`, limit: s.endpointLimit });
      if (specs.length > 0) {
        const until = await takeTokens(specs, signal);
        if (until) return { kind: 'later', until, reason: 'rate_limited' };
      }
      return { kind: 'go', probe };
    },
    observe(target, result) {
      if (result.kind === 'permanent') return; // the endpoint answered: says nothing about its health
      const id = endpointId(target);
      const at = clock.now();
      const prev = pending.get(id);
      // Built field by field, not by spreading `prev`: observe runs once per delivery, and an
      // object spread of a ten-field summary is slow on Node 20.
      const sent = result.kind === 'sent';
      const next: EndpointResultSummary = {
        id,
        target: prev ? prev.target : target,
        succeeded: sent || (prev ? prev.succeeded : false),
        failures: sent ? 0 : (prev ? prev.failures : 0) + 1,
        answers: (prev ? prev.answers : 0) + 1,
        failed: (prev ? prev.failed : 0) + (sent ? 0 : 1),
        firstFailureAt: sent ? null : (prev?.firstFailureAt ?? at),
        lastFailureAt: sent ? (prev ? prev.lastFailureAt : null) : at,
        lastSuccessAt: sent ? at : prev ? prev.lastSuccessAt : null,
        lastErrorCode: sent ? (prev ? prev.lastErrorCode : null) : (result.providerStatus ?? 'error'),
      };
      pending.set(id, next);
      if (result.kind === 'sent' && states.get(id)?.state === 'open') {
        setState(id, 'ok', null);
        void flush(); // a successful probe closes the circuit for every dispatcher now, not a group later
      } else if (!flushTimer) {
        flushTimer = setTimeout(() => void flush(), flushDelayMs);
        flushTimer.unref?.();
      }
    },
    flush,
  };
}

/** Waits `ms`; false when `signal` aborted first. Waiters share one 'abort' listener per signal (onAbort). */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(
      () => {
        unwatch();
        resolve(true);
      },
      Math.max(0, ms),
    );
    const unwatch = onAbort(signal, () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
}
