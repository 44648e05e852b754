/**
 * Differential: the three ways to enqueue write the same rows and refuse the same intents.
 * - `enqueue()` from TypeScript on a raw pg client inside BEGIN … COMMIT,
 * - `enqueue()` inside a Kysely transaction,
 * - `notify_enqueue` through the real psql binary, as another language would call it,
 * each into its own database, compared column by column (ids and clock-derived values normalised).
 * And the rows equal what the contract builders (@notify/contract) produce for that notification.
 *
 * FUZZ_RUNS sets the runs per property (default 40 here: every run spawns psql).
 */
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDeliveryRequest, buildStatusEvent, type Channel } from '@notify/contract';
import { enqueue, enqueueMany, type NotificationIntent, type NotifyError, ValidationError } from '@notify/outbox';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { ulidTime } from '../support/ulid.js';
import { goodPlainIntentArbitrary, intentArbitrary, plainIntentArbitrary, validIntentArbitrary } from './arbitraries.js';
import { psql, psqlError } from './psql.js';

const RUNS = Math.max(10, Math.floor(Number(process.env.FUZZ_RUNS ?? 300) / 7));
// Every run spawns psql (~50 ms on the shared 2-core machine); a long FUZZ_RUNS gets the time it needs.
const TIMEOUT_MS = 60_000 + RUNS * 2 * 250;

/** The documented SQLSTATE of each refusal code (docs/sql-enqueue.md). */
const CODE_OF_SQLSTATE: Record<string, string> = {
  NT001: 'validation_failed',
  NT002: 'unknown_channel',
  NT003: 'payload_too_large',
  NT004: 'bad_expiry',
  NT009: 'idempotency_conflict',
  NT010: 'idempotency_in_progress',
};

let viaPg: TestDatabase;
let viaKysely: TestDatabase;
let viaPsql: TestDatabase;
beforeAll(async () => {
  [viaPg, viaKysely, viaPsql] = await Promise.all([createTestDatabase(), createTestDatabase(), createTestDatabase()]);
});
afterAll(async () => {
  await Promise.all([viaPg?.close(), viaKysely?.close(), viaPsql?.close()]);
});

type Outcome = { readonly id: string } | { readonly code: string; readonly paths: readonly string[] };

/** An outcome as the two ways must agree on it: created (ids differ), or the refusal itself. */
const shape = (o: Outcome) => ('id' in o ? 'created' : o);

async function enqueueWithPg(intent: unknown): Promise<Outcome> {
  return (await enqueueRecordingPath(intent)).outcome;
}

/** `client`, recording the name of each prepared statement it runs into `names`. */
function recordingNames(client: pg.PoolClient, names: string[]) {
  return {
    query: (config: string | { name?: string; text: string; values?: unknown[] }, values?: unknown[]) => {
      if (typeof config === 'string') return client.query(config, values);
      names.push(config.name ?? '');
      return client.query(config);
    },
  };
}

/**
 * enqueue() on a raw pg client inside BEGIN … COMMIT, telling also whether it took its plain path
 * (its statement's name), and the `data` of the notification it returned.
 */
async function enqueueRecordingPath(intent: unknown): Promise<{ outcome: Outcome; plain: boolean; data?: unknown }> {
  const client = await viaPg.pool.connect();
  const names: string[] = [];
  const recording = recordingNames(client, names);
  try {
    await client.query('BEGIN');
    const { notification } = await enqueue(recording, intent as NotificationIntent);
    await client.query('COMMIT');
    return { outcome: { id: notification.id }, plain: names.includes('notify_enqueue_plain_v3'), data: notification.data };
  } catch (err) {
    await client.query('ROLLBACK');
    return { outcome: refusalOf(err), plain: names.includes('notify_enqueue_plain_v3') };
  } finally {
    client.release();
  }
}

async function enqueueWithKysely(intent: unknown): Promise<Outcome> {
  try {
    const { notification } = await viaKysely.db.transaction().execute((trx) => enqueue(trx, intent as NotificationIntent));
    return { id: notification.id };
  } catch (err) {
    return refusalOf(err);
  }
}

async function enqueueWithPsql(intent: unknown): Promise<Outcome> {
  const r = await psql(viaPsql.url, "\\set VERBOSITY verbose\nBEGIN;\nSELECT notify_enqueue(:'intent');\nCOMMIT;\n", {
    intent: JSON.stringify(intent),
  });
  if (r.exitCode === 0) return { id: r.stdout.trim() };
  const error = psqlError(r.stderr);
  if (!error || !CODE_OF_SQLSTATE[error.sqlstate]) throw new Error(`psql failed: ${r.stderr}`);
  expect(error.message.startsWith(`${CODE_OF_SQLSTATE[error.sqlstate]}: `)).toBe(true);
  expect(error.detail?.code).toBe(CODE_OF_SQLSTATE[error.sqlstate]);
  return { code: CODE_OF_SQLSTATE[error.sqlstate]!, paths: (error.detail?.errors ?? []).map((e) => e.path).sort() };
}

function refusalOf(err: unknown): Outcome {
  if (!(err as NotifyError).code) throw err;
  return { code: (err as NotifyError).code, paths: err instanceof ValidationError ? err.issues.map((i) => i.path).sort() : [] };
}

/** A notification row and its outbox rows, with what depends on the id or the clock made comparable. */
async function written(t: TestDatabase, id: string, expiresAtGiven: boolean) {
  // data::text too: the jsonb itself (key order, number spelling), which the parsed object hides
  const {
    rows: [n],
  } = await t.pool.query('SELECT *, data::text AS data_text FROM notifications WHERE id = $1', [id]);
  const { rows: outbox } = await t.pool.query("SELECT * FROM outbox_messages WHERE headers->>'notification-id' = $1 ORDER BY id, part", [
    id,
  ]);
  const now = (n.created_at as Date).toISOString();
  const text = (s: string) => s.replaceAll(id, '<id>').replaceAll(now, '<now>');
  expect(n.updated_at).toEqual(n.created_at);
  expect(n.next_attempt_at).toEqual(n.created_at);
  expect(id.slice(4, 14), 'the id starts with the creation time').toBe(ulidTime((n.created_at as Date).getTime()));
  return {
    notification: {
      ...n,
      id: '<id>',
      created_at: '<now>',
      updated_at: '<now>',
      next_attempt_at: '<now>',
      // relative to creation, unless the intent named the instant
      expires_at: expiresAtGiven ? n.expires_at : (n.expires_at as Date).getTime() - (n.created_at as Date).getTime(),
    },
    outbox: outbox.map((o) => ({
      topic: o.topic,
      key: o.key,
      value: text(o.value),
      headers: JSON.parse(text(JSON.stringify(o.headers))),
      published_at: o.published_at,
    })),
  };
}

describe('enqueue from TypeScript (pg and Kysely) and notify_enqueue from psql', () => {
  it('write identical rows for the same valid intent', { timeout: TIMEOUT_MS }, async () => {
    await fc.assert(
      fc.asyncProperty(validIntentArbitrary, async (intent) => {
        const outcomes = await Promise.all([enqueueWithPg(intent), enqueueWithKysely(intent), enqueueWithPsql(intent)]);
        for (const o of outcomes) expect(o, JSON.stringify(intent)).toHaveProperty('id');
        const [pg, kysely, sql] = outcomes as { id: string }[];
        const given = typeof intent.expires_at === 'string';
        const rows = await Promise.all([
          written(viaPg, pg!.id, given),
          written(viaKysely, kysely!.id, given),
          written(viaPsql, sql!.id, given),
        ]);
        if (given) for (const r of rows) expect(r.notification.expires_at).toEqual(new Date(intent.expires_at as string));
        expect(rows[1]).toEqual(rows[0]);
        expect(rows[2]).toEqual(rows[0]);
      }),
      { numRuns: RUNS },
    );
  });

  it('refuse the same invalid intents with the same code and issue paths', { timeout: TIMEOUT_MS }, async () => {
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(intentArbitrary, async (intent) => {
        const [pg, kysely, sql] = await Promise.all([enqueueWithPg(intent), enqueueWithKysely(intent), enqueueWithPsql(intent)]);
        expect(shape(kysely), JSON.stringify(intent).slice(0, 400)).toEqual(shape(pg));
        expect(shape(sql), JSON.stringify(intent).slice(0, 400)).toEqual(shape(pg));
        if (!('id' in pg)) refused += 1;
      }),
      { numRuns: RUNS * 2 },
    );
    expect(refused).toBeGreaterThan(0);
  });
});

describe("enqueue()'s plain path (rows computed in TypeScript, one INSERT)", () => {
  it(
    'writes the rows notify_enqueue writes for each intent it takes, and leaves every other one to it',
    { timeout: TIMEOUT_MS },
    async () => {
      let plain = 0;
      let withData = 0;
      let refused = 0;
      await fc.assert(
        fc.asyncProperty(plainIntentArbitrary, async (intent) => {
          const [viaPlain, sql] = await Promise.all([enqueueRecordingPath(intent), enqueueWithPsql(intent)]);
          const { outcome } = viaPlain;
          expect(shape(outcome), JSON.stringify(intent).slice(0, 400)).toEqual(shape(sql));
          if (!('id' in outcome)) {
            expect(viaPlain.plain, "a refusal is notify_enqueue_item's").toBe(false);
            refused += 1;
            return;
          }
          if (viaPlain.plain) plain += 1;
          if (viaPlain.plain && (intent as { data?: unknown }).data !== undefined) withData += 1;
          const [mine, theirs] = await Promise.all([
            written(viaPg, outcome.id, false),
            written(viaPsql, (sql as { id: string }).id, false),
          ]);
          expect(mine, JSON.stringify(intent).slice(0, 400)).toEqual(theirs);
          // The returned data is what pg reads back from the row, keys in the same (jsonb's) order.
          expect(JSON.stringify(viaPlain.data)).toBe(JSON.stringify(mine.notification.data));
        }),
        { numRuns: RUNS * 2 },
      );
      // Both ways are exercised: most valid intents here take the plain path (some with data), and refusals happen.
      expect(plain).toBeGreaterThan(RUNS / 2);
      expect(withData).toBeGreaterThan(0);
      expect(refused).toBeGreaterThan(0);
    },
  );
});

/** enqueueMany() on a raw pg client inside BEGIN … COMMIT, telling also whether it took its plain batch statement. */
async function enqueueManyRecordingPath(intents: readonly unknown[], now: Date): Promise<{ outcomes: Outcome[]; plain: boolean }> {
  const client = await viaPg.pool.connect();
  const names: string[] = [];
  const recording = recordingNames(client, names);
  try {
    await client.query('BEGIN');
    const results = await enqueueMany(recording, intents as NotificationIntent[], { now });
    await client.query('COMMIT');
    return {
      outcomes: results.map((r) => (r.ok ? { id: r.notification.id } : refusalOf(r.error))),
      plain: names.includes('notify_enqueue_plain_batch_v3'),
    };
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
}

/** notify_enqueue_batch through psql, as another language would call it: one outcome per intent, in order. */
async function enqueueBatchWithPsql(intents: readonly unknown[], now: Date): Promise<Outcome[]> {
  const r = await psql(
    viaPsql.url,
    "BEGIN;\nSELECT (notification).id, refusal FROM notify_enqueue_batch(:'intents', :'options') ORDER BY ord;\nCOMMIT;\n",
    { intents: JSON.stringify(intents), options: JSON.stringify({ now: now.toISOString() }) },
  );
  if (r.exitCode !== 0) throw new Error(`psql failed: ${r.stderr}`);
  return r.stdout
    .trim()
    .split('\n')
    .map((line) => {
      const bar = line.indexOf('|');
      const id = line.slice(0, bar);
      if (id) return { id };
      const { code, errors } = JSON.parse(line.slice(bar + 1)) as { code: string; errors: { path: string }[] };
      return { code, paths: errors.map((e) => e.path).sort() };
    });
}

describe("enqueueMany()'s plain batch (rows computed in TypeScript, one INSERT per table)", () => {
  it(
    'writes, in order, the rows notify_enqueue_batch writes when every intent is plain, and leaves any other batch to it',
    { timeout: TIMEOUT_MS },
    async () => {
      let plainBatches = 0;
      let otherBatches = 0;
      // Half the batches of good values only (most of them plain), half with near-misses (most not).
      const batches = fc.oneof(
        fc.array(goodPlainIntentArbitrary, { minLength: 1, maxLength: 4 }),
        fc.array(plainIntentArbitrary, { minLength: 1, maxLength: 6 }),
      );
      await fc.assert(
        fc.asyncProperty(batches, fc.integer({ min: 0, max: 999 }), async (intents, ms) => {
          const now = new Date(Date.UTC(2026, 11, 5, 12, 0, 0, ms));
          const [mine, sql] = await Promise.all([enqueueManyRecordingPath(intents, now), enqueueBatchWithPsql(intents, now)]);
          expect(mine.outcomes.map(shape), JSON.stringify(intents).slice(0, 400)).toEqual(sql.map(shape));
          if (mine.outcomes.some((o) => !('id' in o))) expect(mine.plain, "a refusal is notify_enqueue_batch's").toBe(false);
          if (mine.plain) plainBatches += 1;
          else otherBatches += 1;
          for (const [i, o] of mine.outcomes.entries()) {
            if (!('id' in o)) continue;
            const theirs = sql[i] as { id: string };
            const [a, b] = await Promise.all([written(viaPg, o.id, false), written(viaPsql, theirs.id, false)]);
            expect(a, JSON.stringify(intents[i]).slice(0, 400)).toEqual(b);
          }
          // `written` compares instants relative to creation; both were given `now`, so both are it.
          const created = mine.outcomes.flatMap((o) => ('id' in o ? [o.id] : []));
          const instants = await viaPg.pool.query<{ at: Date }>('SELECT created_at AS at FROM notifications WHERE id = ANY($1)', [created]);
          for (const { at } of instants.rows) expect(at).toEqual(now);
          // The outbox rows follow the batch's order, as notify_enqueue_batch's do.
          const { rows } = await viaPg.pool.query<{ id: string }>(
            "SELECT headers->>'notification-id' AS id FROM outbox WHERE headers->>'notification-id' = ANY($1) ORDER BY outbox.id",
            [created],
          );
          expect(rows.map((r) => r.id)).toEqual(created);
        }),
        { numRuns: RUNS * 2 },
      );
      // Both ways are exercised.
      expect(plainBatches).toBeGreaterThan(RUNS / 4);
      expect(otherBatches).toBeGreaterThan(0);
    },
  );
});

describe('the rows PostgreSQL writes', () => {
  it('are the messages the contract builders produce for that notification, byte for byte', { timeout: TIMEOUT_MS }, async () => {
    await fc.assert(
      fc.asyncProperty(validIntentArbitrary, async (intent) => {
        const { rows: queued } = await viaPsql.pool.query<{ id: string }>('SELECT notify_enqueue($1::jsonb) AS id', [
          JSON.stringify(intent),
        ]);
        const id = queued[0]!.id;
        const {
          rows: [n],
        } = await viaPsql.pool.query('SELECT * FROM notifications WHERE id = $1', [id]);
        const { rows: outbox } = await viaPsql.pool.query(
          "SELECT topic, key, value, headers FROM outbox_messages WHERE headers->>'notification-id' = $1 ORDER BY id, part",
          [id],
        );
        const subject = {
          id: n.id,
          tenant_id: n.tenant_id,
          channel: n.channel as Channel,
          recipient: n.recipient,
          traceparent: n.traceparent,
        };
        const expected = [
          buildDeliveryRequest(subject, 1, n.created_at),
          buildStatusEvent(subject, {
            type: 'notification.queued',
            state: 'queued',
            attempts: 0,
            next_attempt_at: n.created_at,
            occurred_at: n.created_at,
          }),
        ];
        expect(outbox.map((o) => ({ topic: o.topic, key: o.key, value: o.value }))).toEqual(
          expected.map((m) => ({ topic: m.topic, key: m.key, value: m.value })),
        );
        expect(outbox.map((o) => o.headers)).toEqual(expected.map((m) => m.headers));
        expect(n.traceparent).toBe(intent.traceparent === 'junk' ? null : (intent.traceparent ?? null));
      }),
      { numRuns: RUNS },
    );
  });
});
