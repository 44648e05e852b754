import { randomBytes } from 'node:crypto';
import { HEADERS, TOPICS, topicName } from '@notify/contract';
import type { Database } from '@notify/migrations';
import { fromKysely } from '@notify/outbox';
import { PartialAckError, createAckCheck } from '@notify/relay';
import { type Clock, silentLogger } from '@notify/runtime';
import type { Kysely } from 'kysely';
import { type Admin, type IHeaders, type Kafka, type KafkaMessage, type Message, Partitioners } from 'kafkajs';
import { CliError, type CliIo } from '../cli-error.js';
import type { Config } from '../config.js';
import { createKafka } from '../kafka-client.js';
import { connectKafkaAdmin, withMigratedDb } from '../preflight.js';
import type { OffsetRange } from './offset-range.js';
import { dlqRedriveRecord } from './sql/dlq-redrive-record.js';
import { dlqRedriveSelect } from './sql/dlq-redrive-select.js';

/** Options of `notify dlq redrive`. */
export interface DlqRedriveArgs {
  readonly ranges: readonly OffsetRange[];
  /** Only dead letters whose `dlq-reason` contains this text (case-insensitive). */
  readonly reason: string | undefined;
  /** Only dead letters read from this topic: its full name or its suffix (`requests`, `retry.5s`). */
  readonly sourceTopic: string | undefined;
  /** List what would be re-published; publish and record nothing. */
  readonly dryRun: boolean;
  /** Re-publish dead letters a previous run already re-published. */
  readonly force: boolean;
  /** How long reading the ranges may take; default 60 s. */
  readonly readTimeoutMs?: number;
}

/** What a run did, also printed as its last line. */
export interface DlqRedriveSummary {
  /** Re-published (or, in a dry run, would be). */
  readonly redriven: number;
  /** Already re-published by an earlier run; skipped without `--force`. */
  readonly alreadyRedriven: number;
  /** Without a usable `dlq-source-topic` (missing, or not a request topic of this prefix). */
  readonly unroutable: number;
  /** In the ranges but not matching `--reason` / `--source-topic`. */
  readonly filteredOut: number;
  /** Re-published per target topic. */
  readonly byTopic: Readonly<Record<string, number>>;
}

/** A dead letter read back from `<prefix>.dlq`. */
interface Letter {
  readonly partition: number;
  readonly offset: bigint;
  readonly message: KafkaMessage;
  readonly headers: Readonly<Record<string, string>>;
}

const DLQ_HEADERS: ReadonlySet<string> = new Set([
  HEADERS.dlqReason,
  HEADERS.dlqSourceTopic,
  HEADERS.dlqSourcePartition,
  HEADERS.dlqSourceOffset,
]);
/** Messages per `sendBatch`; each batch is recorded in the ledger once Kafka acknowledged it. */
const PUBLISH_CHUNK = 500;

/**
 * `notify dlq redrive`: reads the given offset ranges of `<prefix>.dlq`, and re-publishes each
 * dead letter (its original key, value and headers, without the `dlq-*` ones) to the topic it
 * was dead-lettered from, then records it in `dlq_redrives`. A later run skips recorded ones
 * unless `force`; `dryRun` lists and changes nothing. Prints one line per dead letter (position,
 * notification id, source, reason: never keys or values) and a summary.
 */
export async function runDlqRedrive(
  config: Pick<Config, 'databaseUrl' | 'kafkaBrokers' | 'topicPrefix'>,
  args: DlqRedriveArgs,
  deps: { readonly io: CliIo; readonly clock: Clock },
): Promise<DlqRedriveSummary> {
  const { io } = deps;
  const dlqTopic = topicName(config.topicPrefix, TOPICS.dlq);
  return withMigratedDb(config.databaseUrl, 'notify-dlq-redrive', async (db) => {
    const kafka = createKafka({
      brokers: config.kafkaBrokers,
      clientId: 'notify-dlq-redrive',
      logger: silentLogger,
      retry: { retries: 3, initialRetryTime: 300, maxRetryTime: 2_000 },
    });
    const admin = await connectKafkaAdmin(kafka, config.kafkaBrokers);
    try {
      const bounds = await readableBounds(admin, dlqTopic, args.ranges, io);
      const letters = bounds.length === 0 ? [] : await readRanges(kafka, admin, dlqTopic, bounds, args.readTimeoutMs ?? 60_000);

      const done = new Map<string, { count: number; at: Date }>();
      for (const b of bounds) {
        const rows = await dlqRedriveSelect(fromKysely(db), { dlqTopic, partition: b.partition, fromOffset: b.start, toOffset: b.end });
        for (const r of rows) done.set(`${r.dlq_partition}:${r.dlq_offset}`, { count: r.redrive_count, at: new Date(r.redriven_at) });
      }

      const chosen: { letter: Letter; target: string }[] = [];
      let alreadyRedriven = 0;
      let unroutable = 0;
      let filteredOut = 0;
      for (const letter of letters) {
        const source = letter.headers[HEADERS.dlqSourceTopic];
        const reason = letter.headers[HEADERS.dlqReason] ?? '';
        if (!matches(letter, args, config.topicPrefix)) {
          filteredOut++;
          continue;
        }
        const line = describeLetter(letter);
        if (source === undefined || !isRequestTopic(source, config.topicPrefix)) {
          unroutable++;
          io.out(
            `skip\t${line}\t(${source === undefined ? 'no dlq-source-topic header' : `${source} is not a request or retry topic of "${config.topicPrefix}"`})`,
          );
          continue;
        }
        const earlier = done.get(`${letter.partition}:${letter.offset}`);
        if (earlier && !args.force) {
          alreadyRedriven++;
          io.out(`skip\t${line}\t(already redriven ${earlier.at.toISOString()}${earlier.count > 1 ? `, ${earlier.count} times` : ''})`);
          continue;
        }
        io.out(`${args.dryRun ? 'would redrive' : 'redrive'}\t${line}\treason: ${reason}`);
        chosen.push({ letter, target: source });
      }

      const byTopic: Record<string, number> = {};
      for (const c of chosen) byTopic[c.target] = (byTopic[c.target] ?? 0) + 1;
      if (!args.dryRun && chosen.length > 0) await publish(kafka, db, dlqTopic, chosen, deps.clock);

      const summary: DlqRedriveSummary = { redriven: chosen.length, alreadyRedriven, unroutable, filteredOut, byTopic };
      io.out(summaryLine(summary, args.dryRun, letters.length));
      return summary;
    } finally {
      await admin.disconnect().catch(() => {});
    }
  });
}

/** A range clamped to what the partition holds now: `start` … `end`, both included. */
interface Bounds {
  readonly partition: number;
  readonly start: bigint;
  readonly end: bigint;
}

/** Clamps each range to the partition's low and high watermarks; says which ranges hold nothing. */
async function readableBounds(admin: Admin, dlqTopic: string, ranges: readonly OffsetRange[], io: CliIo): Promise<Bounds[]> {
  const topics = await admin.listTopics();
  if (!topics.includes(dlqTopic)) throw new CliError(`dlq redrive: there is no topic ${dlqTopic} (is NOTIFY_TOPIC_PREFIX right?)`);
  const offsets = await admin.fetchTopicOffsets(dlqTopic);
  const bounds: Bounds[] = [];
  for (const r of ranges) {
    const p = offsets.find((o) => o.partition === r.partition);
    if (!p) throw new CliError(`dlq redrive: ${dlqTopic} has no partition ${r.partition} (it has ${offsets.length})`);
    const low = BigInt(p.low);
    const high = BigInt(p.high);
    const start = r.from > low ? r.from : low;
    const end = r.to !== undefined && r.to < high - 1n ? r.to : high - 1n;
    if (start > end) {
      io.err(
        `partition ${r.partition}: nothing in ${r.from}-${r.to ?? ''} (${high > low ? `it holds offsets ${low}-${high - 1n}` : 'it holds no messages'})`,
      );
      continue;
    }
    if (start > r.from) io.err(`partition ${r.partition}: offsets before ${start} are gone (retention); reading ${start}-${end}`);
    bounds.push({ partition: r.partition, start, end });
  }
  return bounds;
}

/**
 * Reads `start`…`end` of each partition with a throwaway consumer group that commits nothing
 * (deleted afterwards). Partitions outside the ranges start at their end, so they yield nothing.
 */
async function readRanges(kafka: Kafka, admin: Admin, dlqTopic: string, bounds: readonly Bounds[], timeoutMs: number): Promise<Letter[]> {
  const groupId = `notify-dlq-redrive-${randomBytes(6).toString('hex')}`;
  const consumer = kafka.consumer({ groupId, allowAutoTopicCreation: false });
  const wanted = new Map(bounds.map((b) => [b.partition, b]));
  const pending = new Set(wanted.keys());
  const letters: Letter[] = [];
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: dlqTopic, fromBeginning: false });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        const b = wanted.get(partition);
        if (!b || !pending.has(partition)) return;
        const offset = BigInt(message.offset);
        if (offset >= b.start && offset <= b.end) letters.push({ partition, offset, message, headers: headerStrings(message.headers) });
        if (offset >= b.end) {
          pending.delete(partition);
          consumer.pause([{ topic: dlqTopic, partitions: [partition] }]);
          if (pending.size === 0) finish();
        }
      },
    });
    for (const b of bounds) consumer.seek({ topic: dlqTopic, partition: b.partition, offset: b.start.toString() });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    const outcome = await Promise.race([finished, timedOut]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      throw new CliError(
        `dlq redrive: reading ${dlqTopic} took longer than ${timeoutMs} ms (partitions not finished: ${[...pending].join(', ')}); nothing was published`,
      );
    }
  } finally {
    await consumer.disconnect().catch(() => {});
    await admin.deleteGroups([groupId]).catch(() => {});
  }
  return letters.sort((a, b) => a.partition - b.partition || (a.offset < b.offset ? -1 : 1));
}

/** Publishes in chunks, each acknowledged by all in-sync replicas and then recorded in the ledger. */
async function publish(
  kafka: Kafka,
  db: Kysely<Database>,
  dlqTopic: string,
  chosen: readonly { letter: Letter; target: string }[],
  clock: Clock,
): Promise<void> {
  // The relay's partitioner: a keyed message lands on the partition its key always maps to. The
  // relay's ack check too: kafkajs 2.2.4 can resolve a sendBatch that left out a partition.
  const acks = createAckCheck(Partitioners.DefaultPartitioner);
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: acks.createPartitioner,
  });
  await producer.connect();
  try {
    for (let i = 0; i < chosen.length; i += PUBLISH_CHUNK) {
      const chunk = chosen.slice(i, i + PUBLISH_CHUNK);
      const byTopic = new Map<string, Message[]>();
      for (const { letter, target } of chunk) {
        const messages = byTopic.get(target) ?? [];
        messages.push({ key: letter.message.key, value: letter.message.value, headers: originalHeaders(letter.message.headers) });
        byTopic.set(target, messages);
      }
      acks.begin();
      try {
        acks.verify(await producer.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) }));
      } catch (err) {
        if (!(err instanceof PartialAckError)) throw err;
        throw new CliError(`dlq redrive: ${err.message}; letters from ${i} on are not recorded as redriven: run the command again`);
      }
      await dlqRedriveRecord(fromKysely(db), {
        dlqTopic,
        now: clock.now(),
        records: chunk.map(({ letter, target }) => ({
          partition: letter.partition,
          offset: letter.offset,
          targetTopic: target,
          notificationId: letter.headers[HEADERS.notificationId] ?? null,
        })),
      });
    }
  } finally {
    await producer.disconnect().catch(() => {});
  }
}

/** The dead letter's headers without the `dlq-*` ones, bytes as they were. */
function originalHeaders(headers: IHeaders | undefined): IHeaders {
  const out: IHeaders = {};
  for (const [name, value] of Object.entries(headers ?? {})) if (!DLQ_HEADERS.has(name) && value !== undefined) out[name] = value;
  return out;
}

/** Header values as strings (the first one of a repeated header). */
function headerStrings(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) out[name] = first.toString();
  }
  return out;
}

/** Requests, high-priority requests and retry tiers of this prefix: where the dispatcher reads requests. */
function isRequestTopic(topic: string, prefix: string): boolean {
  if (!topic.startsWith(`${prefix}.`)) return false;
  const suffix = topic.slice(prefix.length + 1);
  return suffix === TOPICS.requests || suffix === TOPICS.requestsHigh || suffix.startsWith(TOPICS.retry(''));
}

function matches(letter: Letter, args: DlqRedriveArgs, prefix: string): boolean {
  if (args.reason !== undefined && !(letter.headers[HEADERS.dlqReason] ?? '').toLowerCase().includes(args.reason.toLowerCase()))
    return false;
  if (args.sourceTopic !== undefined) {
    const source = letter.headers[HEADERS.dlqSourceTopic];
    if (source !== args.sourceTopic && source !== topicName(prefix, args.sourceTopic)) return false;
  }
  return true;
}

/** `P:OFFSET  ntf_…  from TOPIC[P]@O`: ids and positions only, never keys or values. */
function describeLetter(letter: Letter): string {
  const h = letter.headers;
  const from = h[HEADERS.dlqSourceTopic]
    ? `${h[HEADERS.dlqSourceTopic]}[${h[HEADERS.dlqSourcePartition] ?? '?'}]@${h[HEADERS.dlqSourceOffset] ?? '?'}`
    : '?';
  return `${letter.partition}:${letter.offset}\t${h[HEADERS.notificationId] ?? '-'}\tfrom ${from}`;
}

function summaryLine(s: DlqRedriveSummary, dryRun: boolean, read: number): string {
  const topics = Object.entries(s.byTopic)
    .map(([t, n]) => `${t} ${n}`)
    .join(', ');
  const head = dryRun
    ? `dry run: ${s.redriven} would be re-published${topics ? ` (${topics})` : ''}; nothing was published or recorded`
    : `re-published ${s.redriven}${topics ? ` (${topics})` : ''}`;
  return `${head}; read ${read}, skipped ${s.alreadyRedriven} already redriven${s.alreadyRedriven > 0 ? ' (--force repeats them)' : ''}, ${s.unroutable} without a request topic, ${s.filteredOut} not matching the filters`;
}
