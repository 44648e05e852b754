import type { SqlExecutor } from '@notify/outbox';
import { silentLogger } from '@notify/runtime';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BatchSource, ClaimedBatch, RefusedRow } from './batch-source.js';
import { type RelayEventMap, createRelayEvents } from './events.js';
import { type PublishLoop, type PublishLoopConfig, createPublishLoop } from './publish-loop.js';
import { PublishError, type Publisher } from './publisher.js';
import type { ClaimedRow } from './sql/outbox-claim-batch.js';
import { createMemoryPublisher } from './testing/index.js';

// The loop's control flow (pipelining, commit order, backoff, idle waits, stop) against an
// in-memory batch source: every claim, publish, commit and rollback lands in one log.

const CONFIG: PublishLoopConfig = {
  instanceId: 'unit',
  topicPrefix: 'test',
  batchSize: 2,
  pollIntervalMs: 1_000,
  backoff: { baseMs: 50, maxMs: 400, jitter: 0 },
  heldBackRetryMs: 20,
  heldBackMaxMs: 1_000,
  lingerMs: 0,
  publishTimeoutMs: 1_000,
  maxMessageBytes: 1_024,
};

const row = (id: number): ClaimedRow => ({
  id: String(id),
  txid: String(id),
  topic: 'requests',
  key: `k${id}`,
  value: '{}',
  headers: {},
  event_value: null,
});

/** One scripted claim result: row ids, and optionally slots, held back, a failing or slow commit, a failing claim. */
interface Scripted {
  readonly ids?: readonly number[];
  readonly slots?: readonly number[];
  readonly heldBack?: boolean;
  readonly commitError?: Error;
  readonly commitDelayMs?: number;
  readonly claimError?: Error;
  /** Ids among `ids` whose value is larger than CONFIG.maxMessageBytes. */
  readonly big?: readonly number[];
  /** Ids among `ids` that carry a queued event (`event_value`); `bigEvent`: one larger than CONFIG.maxMessageBytes. */
  readonly withEvent?: readonly number[];
  readonly bigEvent?: readonly number[];
}

/** A request row carrying its queued event, as enqueue writes it since migration 0150. */
const withEvent = (r: ClaimedRow, value = `{"type":"notification.queued","n":${r.id}}`): ClaimedRow => ({
  ...r,
  headers: { 'message-type': 'notification.deliver', attempt: '1' },
  event_value: value,
});

/** Batches from a script (then empty ones); `log` records what happened, in order. */
function scriptedSource(script: Scripted[]): BatchSource & { log: string[]; claims: number } {
  const log: string[] = [];
  const source = {
    log,
    claims: 0,
    async claim(previous?: ClaimedBatch, onSent?: () => void, limit?: number): Promise<ClaimedBatch> {
      source.claims++;
      const s = script.shift() ?? {};
      const name = s.ids?.length ? `[${s.ids.join(',')}]` : '[]';
      log.push(
        (previous ? `claim ${name} after ${previous.rows.at(-1)!.id}` : `claim ${name}`) + (limit !== undefined ? ` limit ${limit}` : ''),
      );
      onSent?.();
      if (s.claimError) throw s.claimError;
      const rows = (s.ids ?? []).map((id) => {
        const r = s.big?.includes(id) ? { ...row(id), value: 'x'.repeat(2_000) } : row(id);
        if (s.bigEvent?.includes(id)) return withEvent(r, 'x'.repeat(2_000));
        return s.withEvent?.includes(id) ? withEvent(r) : r;
      });
      return {
        slots: s.slots ?? [0, 1],
        rows,
        heldBack: s.heldBack ?? false,
        startedAt: 0,
        async commit(_publishMs: number, refused: readonly RefusedRow[] = []) {
          log.push(`commit ${name}` + (refused.length ? ` refusing [${refused.map((r) => `${r.row.id}: ${r.reason}`).join(', ')}]` : ''));
          if (s.commitDelayMs) await new Promise((r) => setTimeout(r, s.commitDelayMs));
          if (s.commitError) {
            log.push(`commit ${name} failed`);
            throw s.commitError;
          }
          log.push(`committed ${name}`);
        },
        async rollback() {
          if (rows.length > 0) log.push(`rollback ${name}`);
        },
      };
    },
  };
  return source;
}

/** A publisher that logs what it publishes into the source's log. */
function loggingPublisher(log: string[], inner: Publisher = createMemoryPublisher()): Publisher {
  return {
    async publish(messages) {
      log.push(`publish [${messages.map((m) => m.key.slice(1)).join(',')}]`);
      await inner.publish(messages);
    },
    close: () => inner.close(),
  };
}

/** Records the `sleeping` flag writes. */
function flagDb(): SqlExecutor & { flags: boolean[] } {
  const flags: boolean[] = [];
  return {
    flags,
    async query<R>(text: string, values: readonly unknown[]) {
      expect(text).toMatch(/UPDATE relay_instances SET sleeping/);
      flags.push(values[1] as boolean);
      return { rows: [] as R[] };
    },
  };
}

function setup(script: Scripted[], options: { held?: readonly number[]; publisher?: Publisher; config?: Partial<PublishLoopConfig> } = {}) {
  const batches = scriptedSource(script);
  const events = createRelayEvents(silentLogger);
  const errors: RelayEventMap['publishError'][] = [];
  events.on('publishError', (e) => void errors.push(e));
  const db = flagDb();
  const loop = createPublishLoop(
    { ...CONFIG, ...options.config },
    {
      batches,
      publisher: loggingPublisher(batches.log, options.publisher),
      db,
      heldSlots: () => options.held ?? [0, 1],
      events,
      logger: silentLogger,
    },
  );
  return { loop, log: batches.log, batches, errors, db };
}

afterEach(() => void vi.useRealTimers());

describe('publish loop: one round at a time (runOnce)', () => {
  it('pipelines full batches: reads batch n+1 before publishing batch n, and commits strictly in order', async () => {
    const { loop, log } = setup([{ ids: [1, 2], commitDelayMs: 5 }, { ids: [3, 4] }, { ids: [5] }]);
    expect(await loop.runOnce()).toEqual({ kind: 'published', count: 2, full: true, heldBack: false });
    expect(await loop.runOnce()).toEqual({ kind: 'published', count: 2, full: true, heldBack: false });
    expect(await loop.runOnce()).toEqual({ kind: 'published', count: 1, full: false, heldBack: false });
    expect(await loop.runOnce()).toEqual({ kind: 'idle', heldBack: false });
    expect(log).toEqual([
      'claim [1,2]',
      'claim [3,4] after 2', // read ahead, within the first batch's slots, before its publish
      'publish [1,2]',
      'commit [1,2]', // marked behind, while the next batch goes to Kafka
      'claim [5] after 4',
      'publish [3,4]',
      'committed [1,2]', // batch 2 commits only after batch 1 did
      'commit [3,4]',
      'committed [3,4]',
      'publish [5]',
      'commit [5]',
      'committed [5]', // not full: committed before the loop goes idle
      'claim []', // afresh, no cursor
    ]);
    await loop.stop();
  });

  it('does not read ahead when the batch did not cover every held slot, so new slots are not starved', async () => {
    const { loop, log } = setup(
      [
        { ids: [1, 2], slots: [0] },
        { ids: [3, 4], slots: [0, 1] },
      ],
      { held: [0, 1] },
    );
    await loop.runOnce();
    await loop.runOnce();
    expect(log.slice(0, 6)).toEqual(['claim [1,2]', 'publish [1,2]', 'commit [1,2]', 'committed [1,2]', 'claim [3,4]', 'claim [] after 4']);
    await loop.stop();
  });

  it('a failed commit rolls back every later batch, is reported as stage "mark", and the next claim starts afresh', async () => {
    const boom = new Error('connection lost');
    const { loop, log, errors } = setup([{ ids: [1, 2], commitError: boom }, { ids: [3, 4] }, { ids: [5, 6] }, { ids: [1] }]);
    await loop.runOnce();
    const failed = await loop.runOnce();
    expect(failed).toMatchObject({ kind: 'failed', stage: 'mark', error: boom, attempt: 1, retryInMs: 50 });
    expect(errors).toEqual([{ error: boom, stage: 'mark', attempt: 1, retryInMs: 50 }]);
    expect(log).toEqual([
      'claim [1,2]',
      'claim [3,4] after 2',
      'publish [1,2]',
      'commit [1,2]',
      'commit [1,2] failed',
      'claim [5,6] after 4',
      'publish [3,4]',
      'rollback [5,6]', // the read-ahead
      'rollback [3,4]', // published, never marked: republished after [1,2], in order
    ]);
    expect(await loop.runOnce()).toMatchObject({ kind: 'published', count: 1 });
    expect(log.at(-4)).toBe('claim [1]'); // from the first unpublished row again
    await loop.stop();
  });

  it('a failed publish rolls back its batch and the read-ahead; the backoff doubles per consecutive failure and resets after a success', async () => {
    const memory = createMemoryPublisher();
    const { loop, log, errors } = setup(
      [{ ids: [1, 2] }, { ids: [3] }, { ids: [1, 2] }, { ids: [3] }, { ids: [1, 2] }, { ids: [3] }, { ids: [4] }],
      {
        publisher: memory,
      },
    );
    memory.failWith = 'broker down';
    expect(await loop.runOnce()).toMatchObject({ kind: 'failed', stage: 'publish', attempt: 1, retryInMs: 50 });
    expect(log).toEqual(['claim [1,2]', 'claim [3] after 2', 'publish [1,2]', 'rollback [1,2]', 'rollback [3]']);
    expect(await loop.runOnce()).toMatchObject({ kind: 'failed', stage: 'publish', attempt: 2, retryInMs: 100 });
    memory.failWith = null;
    expect(await loop.runOnce()).toMatchObject({ kind: 'published', count: 2 });
    expect(await loop.runOnce()).toMatchObject({ kind: 'published', count: 1 });
    memory.failWith = 'broker down again';
    expect(await loop.runOnce()).toMatchObject({ kind: 'failed', stage: 'publish', attempt: 1, retryInMs: 50 });
    expect(errors.map((e) => [e.stage, e.attempt])).toEqual([
      ['publish', 1],
      ['publish', 2],
      ['publish', 1],
    ]);
    expect(memory.messages.map((m) => m.key)).toEqual(['k1', 'k2', 'k3']);
    await loop.stop();
  });

  it('a publish slower than publishTimeoutMs fails the batch with publish_timeout', async () => {
    const hanging: Publisher = { publish: () => new Promise(() => {}), close: async () => {} };
    const { loop, log } = setup([{ ids: [1] }], { publisher: hanging, config: { publishTimeoutMs: 10 } });
    const round = await loop.runOnce();
    expect(round).toMatchObject({ kind: 'failed', stage: 'publish' });
    expect((round as { error: unknown }).error).toBeInstanceOf(PublishError);
    expect((round as { error: PublishError }).error.code).toBe('publish_timeout');
    expect(log).toEqual(['claim [1]', 'publish [1]', 'rollback [1]']);
    await loop.stop();
  });

  it('a failed claim is reported as stage "claim"', async () => {
    const { loop } = setup([{ claimError: new Error('too many connections') }]);
    expect(await loop.runOnce()).toMatchObject({ kind: 'failed', stage: 'claim', attempt: 1 });
    await loop.stop();
  });
});

/** Fake time in 10 ms steps up to `untilMs`: the step (ms since start) at which each claim was made. */
async function claimTimes(batches: { readonly claims: number }, untilMs: number): Promise<number[]> {
  const claimsAt: number[] = [];
  for (let t = 0; t <= untilMs; t += 10) {
    await vi.advanceTimersByTimeAsync(t === 0 ? 0 : 10);
    while (claimsAt.length < batches.claims) claimsAt.push(t);
  }
  return claimsAt;
}

/** `stop()` resolves without fake time passing (the wait in progress ends at once), and no claim is made meanwhile. */
async function expectStopsAtOnce(loop: PublishLoop, batches: { readonly claims: number }): Promise<void> {
  const claims = batches.claims;
  let stopped = false;
  void loop.stop().then(() => (stopped = true));
  await vi.advanceTimersByTimeAsync(0);
  expect(stopped).toBe(true);
  expect(batches.claims).toBe(claims);
}

describe('publish loop: running (start/stop)', () => {
  it('re-polls held-back rows after 20 ms, doubling up to heldBackMaxMs', async () => {
    vi.useFakeTimers();
    const script = Array.from({ length: 20 }, () => ({ heldBack: true }));
    const { loop, batches } = setup(script);
    loop.start();
    const claimsAt = await claimTimes(batches, 2_300);
    // Waits 20, 40, 80, 160, 320, 640, then the 1 s cap.
    expect(claimsAt).toEqual([0, 20, 60, 140, 300, 620, 1_260, 2_260]);
    await loop.stop();
  });

  it('a held-back round that published something re-polls after the first delay again, not the doubled one', async () => {
    vi.useFakeTimers();
    // Nothing published for three rounds (20, 40, 80), then a round that publishes while rows are still
    // held back (a steady stream of short transactions): the next wait is 20 ms again, not 160.
    const script = [{ heldBack: true }, { heldBack: true }, { heldBack: true }, { ids: [1], heldBack: true }, { heldBack: true }];
    const { loop, batches } = setup(script);
    loop.start();
    const claimsAt = await claimTimes(batches, 400);
    expect(claimsAt.slice(0, 6)).toEqual([0, 20, 60, 140, 160, 200]);
    await loop.stop();
  });

  it('idle: flags itself sleeping, looks once more, then sleeps a poll interval unless woken', async () => {
    vi.useFakeTimers();
    const { loop, batches, db } = setup([]);
    loop.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(batches.claims).toBe(2); // the look after raising the flag
    expect(db.flags).toEqual([true]);
    await vi.advanceTimersByTimeAsync(999);
    expect(batches.claims).toBe(2);
    loop.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(batches.claims).toBe(3);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(batches.claims).toBe(4); // the poll interval
    await loop.stop();
  });

  it('a short batch is followed at once by another look; the flag goes up only after a look that found nothing', async () => {
    vi.useFakeTimers();
    const { loop, batches, db, log } = setup([{ ids: [1] }, {}, {}, { ids: [2] }]);
    loop.start();
    await vi.advanceTimersByTimeAsync(0);
    // no flag write before or after the short batch [1]; then up, one more look, and the wait
    expect(log).toEqual(['claim [1]', 'publish [1]', 'commit [1]', 'committed [1]', 'claim []', 'claim []']);
    expect(db.flags).toEqual([true]);
    loop.wake(); // a writer rang: one row, and the relay goes back to its wait with the flag still up
    await vi.advanceTimersByTimeAsync(0);
    expect(log.slice(6)).toEqual(['claim [2]', 'publish [2]', 'commit [2]', 'committed [2]', 'claim []']);
    expect(db.flags).toEqual([true]);
    expect(batches.claims).toBe(5);
    await loop.stop();
  });

  it('the flag comes down when two claims in a row find rows, or one finds a full batch, and goes up after an empty look', async () => {
    vi.useFakeTimers();
    const { loop, db, log } = setup([{}, { ids: [1] }, { ids: [2] }, { ids: [3] }, {}, {}, { ids: [4, 5] }, { ids: [6] }, {}]);
    loop.start();
    await vi.advanceTimersByTimeAsync(0);
    // [] → up; [1] (the look after raising it) keeps it up; [2] makes two in a row → down; [3]; [] → up; [] → wait
    expect(db.flags).toEqual([true, false, true]);
    expect(log.filter((l) => l.startsWith('claim'))).toEqual(['claim []', 'claim [1]', 'claim [2]', 'claim [3]', 'claim []', 'claim []']);
    loop.wake();
    await vi.advanceTimersByTimeAsync(0);
    // a full batch [4,5] is a backlog: down at once; [6] is short; [] → up, one more look
    expect(db.flags).toEqual([true, false, true, false, true]);
    expect(log.filter((l) => l.startsWith('claim')).slice(6)).toEqual(['claim [4,5]', 'claim [6] after 5', 'claim []', 'claim []']);
    await loop.stop();
  });

  it('lingerMs: after a short batch the next look waits lingerMs; after a full batch, or when woken from its sleep, it looks at once', async () => {
    vi.useFakeTimers();
    const { loop, batches, log } = setup([{ ids: [1] }, { ids: [2] }, { ids: [3, 4] }, { ids: [5] }, {}, {}, { ids: [6] }], {
      config: { lingerMs: 50 },
    });
    loop.start();
    const claimsAt = await claimTimes(batches, 190);
    // [1] and [2] are short: 50 ms each; [3,4] is full: [5] is read at once (ahead); [5] is
    // short: 50 ms; the empty look raises the flag and looks once more at once, then sleeps.
    expect(claimsAt).toEqual([0, 50, 100, 100, 150, 150]);
    expect(log.filter((l) => l.startsWith('claim'))).toEqual([
      'claim [1]',
      'claim [2]',
      'claim [3,4]',
      'claim [5] after 4',
      'claim []',
      'claim []',
    ]);
    loop.wake(); // a writer rang the sleeping relay: it claims at once
    await vi.advanceTimersByTimeAsync(0);
    expect(batches.claims).toBe(7);
    expect(log.at(-1)).toBe('committed [6]');
    await vi.advanceTimersByTimeAsync(49);
    expect(batches.claims).toBe(7);
    await vi.advanceTimersByTimeAsync(1);
    expect(batches.claims).toBe(8);
    await loop.stop();
  });

  it('a linger is not cut short by wake() (the writers of a trickle do not ring), but stop() ends it at once', async () => {
    vi.useFakeTimers();
    const { loop, batches } = setup([{ ids: [1] }], { config: { lingerMs: 60_000 } });
    loop.start();
    await vi.advanceTimersByTimeAsync(0);
    loop.wake();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(batches.claims).toBe(1);
    await expectStopsAtOnce(loop, batches);
  });

  it('a backoff wait is not cut short by wake(), but stop() ends it at once', async () => {
    vi.useFakeTimers();
    const { loop, batches } = setup([{ claimError: new Error('down') }, { claimError: new Error('down') }], {
      config: { backoff: { baseMs: 60_000, maxMs: 60_000, jitter: 0 } },
    });
    loop.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(batches.claims).toBe(1);
    loop.wake();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(batches.claims).toBe(1);
    await expectStopsAtOnce(loop, batches);
  });

  it('stop() lets the round in progress finish, commits its batch, and rolls back the read-ahead', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let calls = 0;
    const gated: Publisher = {
      publish: async () => {
        if (++calls === 2) await gate;
      },
      close: async () => {},
    };
    const { loop, log } = setup([{ ids: [1, 2] }, { ids: [3, 4] }, { ids: [5, 6] }], { publisher: gated });
    loop.start();
    await vi.waitFor(() => expect(log).toContain('publish [3,4]'));
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(stopped).toBe(false); // batch [3,4] is still in Kafka
    open();
    await stopping;
    expect(log).toEqual([
      'claim [1,2]',
      'claim [3,4] after 2',
      'publish [1,2]',
      'commit [1,2]',
      'committed [1,2]',
      'claim [5,6] after 4',
      'publish [3,4]',
      'commit [3,4]',
      'committed [3,4]',
      'rollback [5,6]',
    ]);
    await expect(loop.runOnce()).rejects.toThrow(/not started/);
  });
});

describe('publish loop: a row that carries its queued event', () => {
  it('publishes the row, then its event to <prefix>.events with the same key, in row order', async () => {
    const publisher = createMemoryPublisher();
    const { loop } = setup([{ ids: [1, 2, 3], withEvent: [1, 3] }], { publisher });
    expect(await loop.runOnce()).toMatchObject({ kind: 'published', count: 3 });
    expect(publisher.messages.map((m) => [m.topic, m.key, m.value, m.headers['message-type'] ?? null])).toEqual([
      ['test.requests', 'k1', '{}', 'notification.deliver'],
      ['test.events', 'k1', '{"type":"notification.queued","n":1}', 'notification.queued'],
      ['test.requests', 'k2', '{}', null],
      ['test.requests', 'k3', '{}', 'notification.deliver'],
      ['test.events', 'k3', '{"type":"notification.queued","n":3}', 'notification.queued'],
    ]);
  });

  it('sets the row aside whole when its event is larger than maxMessageBytes: neither message is published', async () => {
    const publisher = createMemoryPublisher();
    const { loop, log } = setup([{ ids: [1, 2], bigEvent: [1] }], { publisher });
    expect(await loop.runOnce()).toMatchObject({ kind: 'published', count: 2 });
    expect(publisher.messages.map((m) => m.key)).toEqual(['k2']);
    expect(log.find((l) => l.startsWith('commit'))).toMatch(/^commit \[1,2\] refusing \[1: message_too_large: \d+ bytes > 1024\]$/);
  });
});

describe('publish loop: rows Kafka refuses for good', () => {
  it('sets aside a row larger than maxMessageBytes without publishing it, and publishes the rest', async () => {
    const { loop, log } = setup([{ ids: [1, 2], big: [1] }]);
    expect(await loop.runOnce()).toMatchObject({ kind: 'published', count: 2 });
    expect(log).toContain('publish [2]');
    expect(log.find((l) => l.startsWith('commit'))).toMatch(/^commit \[1,2\] refusing \[1: message_too_large: \d+ bytes > 1024\]$/);
  });

  it('after a refusal of a batch, goes one row at a time, sets aside the refused row and then batches again', async () => {
    const refusing: Publisher = {
      async publish(messages) {
        if (messages.some((m) => m.key === 'k2')) {
          const cause = Object.assign(new Error('The request included a message larger than the max message size the server will accept'), {
            type: 'MESSAGE_TOO_LARGE',
            retriable: false,
          });
          throw new PublishError('publish_failed', 'kafka publish failed', { cause, retriable: false });
        }
      },
      close: async () => {},
    };
    const { loop, log, errors } = setup([{ ids: [1, 2] }, { ids: [3, 4] }, { ids: [1] }, { ids: [2] }, { ids: [3, 4] }], {
      publisher: refusing,
    });
    expect(await loop.runOnce()).toMatchObject({ kind: 'failed', stage: 'publish' });
    expect(await loop.runOnce()).toMatchObject({ kind: 'published', count: 1 });
    expect(await loop.runOnce()).toMatchObject({ kind: 'published', count: 1 });
    expect(await loop.runOnce()).toMatchObject({ kind: 'published', count: 2 });
    expect(errors).toHaveLength(1);
    expect(log.filter((l) => l.startsWith('claim') || l.startsWith('commit ['))).toEqual([
      'claim [1,2]',
      'claim [3,4] after 2',
      'claim [1] limit 1',
      'commit [1]',
      'claim [2] limit 1',
      'commit [2] refusing [2: message_too_large]',
      'claim [3,4]', // batching again
      'claim [] after 4',
      'commit [3,4]',
    ]);
  });
});
