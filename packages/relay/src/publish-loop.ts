import { performance } from 'node:perf_hooks';
import { type SqlExecutor } from '@notify/outbox';
import { TOPICS, topicName } from '@notify/contract';
import { type Logger, backoffDelayMs, errorSummary, withTimeout } from '@notify/runtime';
import type { BatchSource, ClaimedBatch, RefusedRow } from './batch-source.js';
import { bytesOver, refusedForGood } from './refusal.js';
import type { ResolvedRelayConfig } from './config.js';
import type { BatchStage, RelayEvents } from './events.js';
import { PublishError, type PublishMessage, type Publisher } from './publisher.js';
import { queuedEventHeaders } from './queued-event.js';
import { relayInstanceSleeping } from './sql/relay-instance-sleeping.js';
import { WakeSignal } from './wake-signal.js';
import { HOLDERS_SQL, trace, tracing } from './trace.js';

/** The part of the relay's configuration the publish loop reads. */
export type PublishLoopConfig = Pick<
  ResolvedRelayConfig,
  | 'instanceId'
  | 'topicPrefix'
  | 'batchSize'
  | 'pollIntervalMs'
  | 'backoff'
  | 'heldBackRetryMs'
  | 'heldBackMaxMs'
  | 'lingerMs'
  | 'publishTimeoutMs'
  | 'maxMessageBytes'
>;

/** What `createPublishLoop` needs. */
export interface PublishLoopDeps {
  /** Claim transactions (`createBatchSource`). */
  readonly batches: BatchSource;
  readonly publisher: Publisher;
  /** For this instance's `sleeping` flag in `relay_instances` (`relayInstanceSleeping`). */
  readonly db: SqlExecutor;
  /** The slots this instance holds now (the lease service's `slots`). */
  readonly heldSlots: () => readonly number[];
  readonly events: RelayEvents;
  readonly logger: Logger;
  /** Test seam: runs after the broker acknowledged a batch, before it is marked (see `RelayHooks`). */
  readonly afterPublish?: ((ids: readonly string[]) => void | Promise<void>) | undefined;
}

/**
 * What one round of the loop did.
 * - `published`: a batch is in Kafka and handed to its mark + commit. `full` batches are followed
 *   at once by the next round, whose read may already be under way (pipelining); otherwise the
 *   commit has finished (unless the loop is stopping) and the loop looks again after `lingerMs`
 *   (rows held back: after the held-back re-poll delay); only a claim that finds nothing makes it
 *   go idle.
 * - `idle`: nothing to publish; `heldBack` when rows wait behind an older open transaction.
 * - `failed`: a claim, publish or mark failed and was reported (`publishError`); every batch not
 *   committed was rolled back. The loop waits `retryInMs` before the next round.
 */
export type PublishRound =
  | { readonly kind: 'published'; readonly count: number; readonly full: boolean; readonly heldBack: boolean }
  | { readonly kind: 'idle'; readonly heldBack: boolean }
  | { readonly kind: 'failed'; readonly stage: BatchStage; readonly error: unknown; readonly attempt: number; readonly retryInMs: number };

/** The relay's batch loop. */
export interface PublishLoop {
  /**
   * One round, for callers that drive the loop themselves (tests): settles the previous batch's
   * commit if needed, claims a batch (or takes the one read ahead), publishes it and hands it to
   * mark + commit. No waiting: backoff and idle waits are the caller's. Not while started.
   */
  runOnce(): Promise<PublishRound>;
  /** Runs rounds until `stop`, waiting between them (backoff after a failure; poll interval, held-back re-poll or a wake-up when idle). */
  start(): void;
  /** Ends the current wait, finishes the round in progress and the pending commit, rolls back a read-ahead. Resolves when done. Idempotent. */
  stop(): Promise<void>;
  /** Look for work now (a NOTIFY, the LISTEN connection back, new slots): ends an idle wait, or makes the next one return at once. */
  wake(): void;
}

/**
 * The batch loop. While there is a backlog it pipelines, with two batches in flight: batch
 * n+1 is read (after batch n's last row) while batch n is in Kafka, and batch n is marked and
 * committed while batch n+1 is in Kafka. Commits happen strictly in batch order, and a failed
 * commit rolls back every later batch, so the rows left unmarked after any failure are a
 * suffix of what was published: a replay repeats that suffix in order (at-least-once) and
 * never sends an older row after a newer one on its own. The publish itself is never
 * concurrent: batch n+1 is handed to Kafka only after batch n was acknowledged.
 */
export function createPublishLoop(config: PublishLoopConfig, deps: PublishLoopDeps): PublishLoop {
  const { logger, events } = deps;
  const signal = new WakeSignal();
  let stopped = false;
  let done: Promise<void> | null = null;
  let failures = 0;
  let heldBackDelay = config.heldBackRetryMs;
  let ahead: Promise<ClaimedBatch> | null = null;
  let committing: Promise<void> | null = null; // mark + commit of the previous batch
  let sleeping = false;
  // Claims in a row that found rows, since the last one that found none (see `round`).
  let busyClaims = 0;
  // After Kafka refused a batch for good (REFUSED_FOR_GOOD), this many rows are claimed and
  // published one at a time, so the refused row is found and set aside and the rest go out.
  let isolating = 0;

  const topics = new Map<string, string>(); // suffix → full name
  const toMessage = (topic: string, key: string, value: string, rowHeaders: Record<string, string>): PublishMessage => {
    const headers = stringHeaders(rowHeaders);
    let full = topics.get(topic);
    if (full === undefined) topics.set(topic, (full = topicName(config.topicPrefix, topic)));
    return { topic: full, key, value, headers };
  };

  const abandon = async (claimed: Promise<ClaimedBatch> | null): Promise<void> => {
    if (!claimed) return;
    const c = await claimed.catch(() => null);
    await c?.rollback();
  };

  /** Counts and reports a failed batch; the round ends with it and the loop waits `retryInMs`. */
  const failed = (stage: BatchStage, error: unknown): PublishRound => {
    failures++;
    const retryInMs = backoffDelayMs({ attempt: failures, ...config.backoff, random: Math.random });
    logger.warn({ err: errorSummary(error), stage, attempt: failures, retryInMs }, 'relay batch failed; rows stay unpublished');
    events.emit('publishError', { error, stage, attempt: failures, retryInMs });
    return { kind: 'failed', stage, error, attempt: failures, retryInMs };
  };

  /** Waits for the previous batch's commit: null when it committed; when it failed, rolls back the read-ahead and reports (stage `mark`). */
  const settle = async (): Promise<PublishRound | null> => {
    if (!committing) return null;
    const pending = committing;
    committing = null;
    try {
      await pending;
      return null;
    } catch (error) {
      await abandon(ahead);
      ahead = null;
      return failed('mark', error);
    }
  };

  /** Flags this instance as sleeping (the trigger then rings) or busy; only transitions touch the database. */
  const setSleeping = async (value: boolean) => {
    if (sleeping === value) return;
    try {
      await relayInstanceSleeping(deps.db, { instanceId: config.instanceId, sleeping: value });
      sleeping = value;
      if (tracing) trace({ e: 'sleeping', v: value });
    } catch (error) {
      // Not fatal: without the flag the relay is woken by its poll interval instead.
      events.emit('error', { error, stage: 'wakeup' });
    }
  };

  const idle = async (heldBack: boolean) => {
    if (!heldBack && !sleeping) {
      // Ring first, then look once more before sleeping: a row committed before the flag
      // became visible did not ring, and the next claim catches it.
      await setSleeping(true);
      if (sleeping) return;
    }
    if (heldBack) {
      // Rows wait behind an older open transaction that may never notify: re-poll soon.
      if (tracing) trace({ e: 'wait', ms: heldBackDelay, heldBack: true, sleeping });
      const woken = await signal.wait(heldBackDelay);
      if (tracing) trace({ e: 'woke', woken });
      heldBackDelay = Math.min(heldBackDelay * 2, config.heldBackMaxMs);
    } else {
      heldBackDelay = config.heldBackRetryMs;
      if (tracing) trace({ e: 'wait', ms: config.pollIntervalMs, heldBack: false, sleeping });
      const woken = await signal.wait(config.pollIntervalMs);
      if (tracing) trace({ e: 'woke', woken });
    }
  };

  let roundNo = 0;
  const round = async (): Promise<PublishRound> => {
    const r = ++roundNo;
    if (tracing) trace({ e: 'round', r, ahead: ahead !== null });
    if (!ahead) {
      // A fresh claim reads from the first unpublished row: the previous batch must be
      // committed (marked) first, or it would be read and published again.
      const markFailed = await settle();
      if (markFailed) return markFailed;
      signal.clear(); // this claim sees everything committed before now
    }
    let current: ClaimedBatch;
    try {
      current = await (ahead ?? (isolating > 0 ? deps.batches.claim(undefined, undefined, 1) : deps.batches.claim()));
    } catch (error) {
      ahead = null;
      return (await settle()) ?? failed('claim', error);
    }
    ahead = null;
    if (tracing) {
      trace({
        e: 'claim',
        r,
        start: performance.timeOrigin + current.startedAt,
        n: current.rows.length,
        heldBack: current.heldBack,
        ids: current.rows.map((row) => row.id),
      });
      if (current.heldBack) {
        deps.db.query(HOLDERS_SQL, []).then(
          (res) => trace({ e: 'holders', r, ...(res.rows[0] as object) }),
          () => {},
        );
      }
    }
    const full = current.rows.length === config.batchSize;
    if (current.rows.length > 0) {
      // The flag comes down only once the relay is busy: a full batch, or rows found by two
      // claims in a row. A relay woken for a row or two keeps it up (writers ring, which costs
      // little at such a rate) and goes back to its wait without writing it twice per row; under
      // a steady stream it is written at the transitions only, not twice per short round.
      busyClaims++;
      if (full || busyClaims >= 2) await setSleeping(false);
    } else {
      busyClaims = 0;
      const markFailed = await settle();
      if (markFailed) return markFailed;
      failures = 0;
      return { kind: 'idle', heldBack: current.heldBack };
    }
    // Pipeline only while this batch covered every slot the instance holds; otherwise the next
    // claim starts afresh (no cursor), so newly taken slots are not starved by a long backlog.
    const coversHeld = deps.heldSlots().every((s) => current.slots.includes(s));
    if (full && coversHeld && !stopped) {
      // Read the next batch now, and let the read reach the server before kafkajs encodes
      // this batch: the encoding holds the event loop (about 50 ms per 1,000 messages,
      // measured), and the server runs the read meanwhile instead of after.
      let sent!: () => void;
      const onSent = new Promise<void>((r) => (sent = r));
      ahead = deps.batches.claim(current, sent);
      ahead.catch(() => {}); // handled when awaited
      await Promise.race([
        onSent,
        ahead.then(
          () => {},
          () => {},
        ),
      ]);
    }
    let publishMs = 0;
    // A row larger than Kafka takes is set aside without trying: the broker would refuse it for good.
    const refused: RefusedRow[] = [];
    const messages: PublishMessage[] = [];
    const sent: string[] = [];
    for (const row of current.rows) {
      // A row's messages: its own, then the queued event it carries (migration 0150).
      const own = toMessage(row.topic, row.key, row.value, row.headers);
      const event = row.event_value === null ? null : toMessage(TOPICS.events, row.key, row.event_value, queuedEventHeaders(own.headers));
      // A row goes out whole or is set aside whole: its queued event never without its request.
      const over = Math.max(bytesOver(own, config.maxMessageBytes), event ? bytesOver(event, config.maxMessageBytes) : 0);
      if (over > 0) refused.push({ row, reason: `message_too_large: ${over} bytes > ${config.maxMessageBytes}` });
      else {
        messages.push(own);
        if (event) messages.push(event);
        sent.push(row.id);
      }
    }
    try {
      const t0 = performance.now();
      if (messages.length > 0) {
        await withTimeout(
          deps.publisher.publish(messages),
          config.publishTimeoutMs,
          () => new PublishError('publish_timeout', `publish of ${messages.length} messages took over ${config.publishTimeoutMs} ms`),
        );
      }
      publishMs = performance.now() - t0;
      if (tracing) trace({ e: 'pub', r, n: messages.length, ms: publishMs });
      if (deps.afterPublish) await deps.afterPublish(sent);
    } catch (error) {
      const refusal = refusedForGood(error);
      if (refusal && sent.length === 1) {
        // The one row of this batch is the one Kafka refuses: set it aside like an oversized one.
        refused.push({ row: current.rows.find((r) => r.id === sent[0])!, reason: refusal.toLowerCase() });
      } else {
        // Somewhere in this batch is a row Kafka refuses: go one row at a time to find it.
        if (refusal) isolating = Math.max(isolating, current.rows.length);
        await current.rollback();
        await abandon(ahead);
        ahead = null;
        return (await settle()) ?? failed('publish', error);
      }
    }
    for (const { row, reason } of refused) {
      logger.warn({ outboxId: row.id, topic: row.topic, reason }, 'Kafka refuses this outbox row for good; set aside in outbox_refused');
    }
    if (isolating > 0) isolating -= current.rows.length;
    // The previous batch must have committed before this one may.
    const markFailed = await settle();
    if (markFailed) {
      await current.rollback();
      return markFailed;
    }
    failures = 0;
    committing = current.commit(publishMs, refused);
    committing.catch(() => {}); // handled by settle()
    if (tracing)
      committing.then(
        () => trace({ e: 'commit', r }),
        () => {},
      );
    const published: PublishRound = { kind: 'published', count: current.rows.length, full, heldBack: current.heldBack };
    // Full: likely more, no sleep (and the next round may be reading already). Stopping: `stop` settles the commit.
    if (full || stopped) return published;
    return (await settle()) ?? published;
  };

  /** After the last round: the pending commit is awaited (a failure is reported), a read-ahead rolled back. */
  const drain = async (): Promise<void> => {
    await settle();
    await abandon(ahead);
    ahead = null;
  };

  const run = async (): Promise<void> => {
    while (!stopped) {
      const r = await round();
      if (r.kind === 'failed') {
        await signal.wait(r.retryInMs, { wakeable: false });
      } else if (r.kind === 'idle' || !r.full) {
        if (stopped) break;
        // A round that published made progress: the rows still held back sit behind transactions
        // that were open a moment ago, and under a steady stream of short ones they are free
        // within milliseconds. The doubling is for rounds that publish nothing, i.e. a long wait.
        if (r.kind === 'published') heldBackDelay = config.heldBackRetryMs;
        // A short batch went out: look again after `lingerMs` (Kafka's linger.ms, for the same
        // reason), so the rows committed meanwhile share the next round. The flag goes up only
        // after a look that found nothing (idle), so a steady stream does not write it before
        // every claim, and a relay woken from its sleep claims at once.
        if (r.kind === 'published' && !r.heldBack) {
          if (config.lingerMs > 0) await signal.wait(config.lingerMs, { wakeable: false });
          continue;
        }
        await idle(r.heldBack);
      }
    }
    await drain();
  };

  return {
    async runOnce() {
      if (done) throw new Error('runOnce is for a publish loop that was not started (or was stopped)');
      return round();
    },
    start() {
      done ??= run();
    },
    stop() {
      stopped = true;
      signal.interrupt();
      return (done ??= drain());
    },
    wake: () => {
      if (tracing) trace({ e: 'wake' });
      signal.wake();
    },
  };
}

/** A row's headers as kafkajs takes them: jsonb gives strings unless a writer stored another JSON value; only then is a copy made, with that value as JSON text. */
function stringHeaders(rowHeaders: Record<string, unknown>): Record<string, string> {
  for (const k in rowHeaders) {
    if (typeof rowHeaders[k] !== 'string') {
      const headers: Record<string, string> = {};
      for (const h in rowHeaders) {
        const v = rowHeaders[h];
        headers[h] = typeof v === 'string' ? v : JSON.stringify(v);
      }
      return headers;
    }
  }
  return rowHeaders as Record<string, string>;
}
