import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

// Every record the dispatcher and the callback intake consume goes through kafkajs' record
// decoder; patches/kafkajs@2.2.4.patch computes its timestamp and offset in Number arithmetic
// while that is exact (2.2.4 parsed two decimal strings into BigInt-backed Longs per record),
// builds its headers in one object (2.2.4 spread a growing object once per header), and decodes
// header keys in place. The patched decoder must return exactly what 2.2.4's did: `original`
// below is 2.2.4's record decoder, line for line, with its own header and string reads.
const require = createRequire(import.meta.url);

interface KafkaDecoder {
  buffer: Buffer;
  offset: number;
  readInt8(): number;
  readVarInt(): number;
  readVarLong(): unknown;
  readVarIntBytes(): Buffer | null;
  readVarIntArray<T>(reader: (d: KafkaDecoder) => T): T[];
}
interface KafkaEncoder {
  readonly buffer: Buffer;
  writeInt8(v: number): KafkaEncoder;
  writeVarInt(v: number): KafkaEncoder;
  writeVarLong(v: number | bigint): KafkaEncoder;
  writeVarIntString(v: string | null): KafkaEncoder;
  writeVarIntBytes(v: Buffer | null): KafkaEncoder;
}
interface BatchContext {
  readonly firstOffset: string;
  readonly firstTimestamp: string;
  readonly timestampType: number;
  readonly maxTimestamp: string | undefined;
  readonly magicByte: number;
  readonly isControlBatch: boolean;
}
type Headers = Record<string, Buffer | Buffer[]>;
interface DecodedRecord {
  readonly timestamp: string;
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Headers;
}

const Decoder = require('kafkajs/src/protocol/decoder.js') as new (buffer: Buffer) => KafkaDecoder;
const Encoder = require('kafkajs/src/protocol/encoder.js') as new () => KafkaEncoder;
const Long = require('kafkajs/src/utils/long.js') as { fromValue(v: unknown): { add(v: unknown): { toString(): string } } };
const TimestampTypes = require('kafkajs/src/protocol/timestampTypes.js') as { LOG_APPEND_TIME: number };
const decodeRecord = require('kafkajs/src/protocol/recordBatch/record/v0/decoder.js') as (
  d: KafkaDecoder,
  c: BatchContext,
) => DecodedRecord;
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0/index.js') as {
  RecordBatch: (args: object) => Promise<{ readonly buffer: Buffer }>;
};
const Record = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (args: object) => unknown;
const decodeBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder.js') as (d: KafkaDecoder) => Promise<{ records: DecodedRecord[] }>;
const { addExact, compareExact } = require('kafkajs/src/utils/exactOffset.js') as {
  addExact(base: unknown, delta: number): string | undefined;
  compareExact(a: unknown, b: unknown): number | undefined;
};
const Batch = require('kafkajs/src/consumer/batch.js') as new (
  topic: string,
  fetchedOffset: string,
  partitionData: {
    partition: number;
    highWatermark: string;
    messages: { offset: string; isControlRecord?: boolean }[];
    abortedTransactions: [];
  },
) => { readonly messages: readonly { offset: string }[] };
const OffsetManager = require('kafkajs/src/consumer/offsetManager/index.js') as new (options: {
  memberAssignment: Record<string, number[]>;
}) => {
  resolveOffset(o: { topic: string; partition: number; offset: string }): void;
  readonly resolvedOffsets: Record<string, Record<number, string>>;
};

/** kafkajs 2.2.4's record decoder (src/protocol/recordBatch/record/v0/decoder.js) before the patch. */
function original(decoder: KafkaDecoder, batchContext: BatchContext): DecodedRecord {
  const { firstOffset, firstTimestamp, timestampType, maxTimestamp } = batchContext;
  decoder.readInt8();
  const timestampDelta = decoder.readVarLong();
  const timestamp =
    timestampType === TimestampTypes.LOG_APPEND_TIME && maxTimestamp
      ? maxTimestamp
      : Long.fromValue(firstTimestamp).add(timestampDelta).toString();
  const offsetDelta = decoder.readVarInt();
  const offset = Long.fromValue(firstOffset).add(offsetDelta).toString();
  const key = decoder.readVarIntBytes();
  const value = decoder.readVarIntBytes();
  const headers = decoder
    .readVarIntArray((d) => {
      // 2.2.4's readVarIntString: a slice, then toString.
      const length = d.readVarInt();
      const k = length === -1 ? null : d.buffer.slice(d.offset, d.offset + length).toString('utf8');
      if (length !== -1) d.offset += length;
      return { key: k as string, value: d.readVarIntBytes() as Buffer };
    })
    .reduce<Headers>((obj, { key: k, value: v }) => {
      const current = obj[k];
      return { ...obj, [k]: current === undefined ? v : Array.isArray(current) ? current.concat([v]) : [current, v] };
    }, {});
  return { timestamp, offset, key, value, headers };
}

interface RecordInput {
  readonly timestampDelta: number | bigint;
  readonly offsetDelta: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: readonly (readonly [string | null, Buffer | null])[];
}

/** One record's bytes, written field by field (so headers may repeat and interleave). */
function recordBytes(r: RecordInput): Buffer {
  const e = new Encoder()
    .writeInt8(0)
    .writeVarLong(r.timestampDelta)
    .writeVarInt(r.offsetDelta)
    .writeVarIntBytes(r.key)
    .writeVarIntBytes(r.value);
  e.writeVarInt(r.headers.length);
  for (const [k, v] of r.headers) e.writeVarIntString(k).writeVarIntBytes(v);
  return Buffer.from(e.buffer);
}

/** Both decoders' results and where each stopped. */
function both(bytes: Buffer, context: BatchContext) {
  const a = new Decoder(bytes);
  const b = new Decoder(bytes);
  return { patched: decodeRecord(a, context), original: original(b, context), ends: [a.offset, b.offset] };
}

function expectSame(patched: DecodedRecord, expected: DecodedRecord) {
  expect(patched).toMatchObject(expected);
  expect(Object.getOwnPropertyNames(patched.headers)).toEqual(Object.getOwnPropertyNames(expected.headers));
  expect(Object.getPrototypeOf(patched.headers)).toBe(Object.getPrototypeOf(expected.headers));
  for (const k of Object.getOwnPropertyNames(expected.headers)) expect(patched.headers[k]).toEqual(expected.headers[k]);
}

const context = (over: Partial<BatchContext> = {}): BatchContext => ({
  firstOffset: '0',
  firstTimestamp: '1764750000000',
  timestampType: 0,
  maxTimestamp: undefined,
  magicByte: 2,
  isControlBatch: false,
  ...over,
});
const buf = (s: string) => Buffer.from(s);

describe('kafkajs record decoder (patched)', () => {
  it('decodes what 2.2.4 decoded: repeated, interleaved and odd header keys', () => {
    const bytes = recordBytes({
      timestampDelta: -5,
      offsetDelta: 7,
      key: buf('acme/webhook/r'),
      value: buf('{"v":1}'),
      headers: [
        ['x', buf('1')],
        ['y', buf('2')],
        ['x', buf('3')],
        ['__proto__', buf('p')],
        ['toString', buf('t')],
        ['10', buf('n')],
        ['x', buf('4')],
        [null, buf('null key')],
        ['é', null],
      ],
    });
    const { patched, original: expected, ends } = both(bytes, context({ firstOffset: '41' }));
    expectSame(patched, expected);
    expect(ends[0]).toBe(ends[1]);
    expect(patched.offset).toBe('48');
    expect(patched.timestamp).toBe('1764749999995');
    expect(patched.headers.x).toEqual([buf('1'), buf('3'), buf('4')]);
    expect(Object.prototype.hasOwnProperty.call(patched.headers, '__proto__')).toBe(true);
  });

  it('takes the Long path where Number would round: offsets and instants past 2^53, deltas of 8 bytes and more', () => {
    const cases: [BatchContext, number | bigint, number][] = [
      [context({ firstOffset: '9007199254740990' }), 0, 5], // 9007199254740995: not a safe integer
      [context({ firstOffset: '9223372036854775000' }), 0, 800],
      [context({ firstTimestamp: '9007199254740993' }), 1, 0],
      [context(), 2n ** 55n, 0], // a 9-byte varlong
      [context(), -(2n ** 60n), 0],
      [context(), 2 ** 48, 1], // 7 bytes: the Number path
      [context({ firstTimestamp: '-1' }), 0, 0], // no timestamp
      [context({ timestampType: TimestampTypes.LOG_APPEND_TIME, maxTimestamp: '1764750009999' }), 2n ** 56n, 3],
    ];
    for (const [ctx, timestampDelta, offsetDelta] of cases) {
      const bytes = recordBytes({ timestampDelta, offsetDelta, key: null, value: buf('v'), headers: [['a', buf('b')]] });
      const { patched, original: expected, ends } = both(bytes, ctx);
      expectSame(patched, expected);
      expect(ends[0]).toBe(ends[1]);
    }
  });

  it('agrees with 2.2.4 on generated records', () => {
    const headerKey = fc.constantFrom<string | null>(
      'message-type',
      'x',
      'y',
      '__proto__',
      'toString',
      'constructor',
      '1',
      '07',
      'é',
      '',
      null,
    );
    const bytes = fc.option(fc.uint8Array({ maxLength: 20 }).map((a) => Buffer.from(a)));
    const decimal = fc.oneof(
      fc.integer({ min: 0, max: 2 ** 45 }).map(String),
      fc.bigInt({ min: 0n, max: 2n ** 62n }).map(String),
      fc.constantFrom('-1', '0', '999999999999999', '1000000000000000', '9007199254740991', '9007199254740992'),
    );
    fc.assert(
      fc.property(
        fc.record({
          timestampDelta: fc.oneof(fc.integer({ min: -100_000, max: 100_000 }), fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n })),
          offsetDelta: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
          key: bytes,
          value: bytes,
          headers: fc.array(fc.tuple(headerKey, bytes), { maxLength: 10 }),
        }),
        decimal,
        decimal,
        fc.constantFrom(0, TimestampTypes.LOG_APPEND_TIME),
        fc.constantFrom('1764750009999', undefined),
        (record, firstOffset, firstTimestamp, timestampType, maxTimestamp) => {
          const ctx = context({ firstOffset, firstTimestamp, timestampType, maxTimestamp });
          const { patched, original: expected, ends } = both(recordBytes(record), ctx);
          expectSame(patched, expected);
          expect(ends[0]).toBe(ends[1]);
        },
      ),
      { numRuns: 3_000 },
    );
  });

  it('decodes a whole batch: offsets and instants from the batch, headers as the producer sent them', async () => {
    const headers = { 'message-type': 'notification.deliver', 'tenant-id': 'acme', x: ['1', '2'] };
    const batch = await RecordBatch({
      firstOffset: '123456',
      firstTimestamp: 1_764_750_000_000,
      maxTimestamp: 1_764_750_000_099,
      lastOffsetDelta: 2,
      records: [0, 1, 2].map((i) => Record({ offsetDelta: i, timestampDelta: i * 33, key: buf(`k${i}`), value: buf(`v${i}`), headers })),
    });
    const { records } = await decodeBatch(new Decoder(batch.buffer));
    expect(records.map((r) => [r.offset, r.timestamp, r.key?.toString(), r.value?.toString()])).toEqual([
      ['123456', '1764750000000', 'k0', 'v0'],
      ['123457', '1764750000033', 'k1', 'v1'],
      ['123458', '1764750000066', 'k2', 'v2'],
    ]);
    expect(records[2]!.headers).toEqual({ 'message-type': buf('notification.deliver'), 'tenant-id': buf('acme'), x: [buf('1'), buf('2')] });
  });
});

// The patch's other Number fast paths (utils/exactOffset): a consumed message's offset compared
// with the fetched one (Batch), resolved (OffsetManager.resolveOffset, offset + 1) and compared
// with the batch's last (the runner's isSameOffset, which calls compareExact).
describe('kafkajs offsets in Number arithmetic (patched)', () => {
  const decimal = fc.oneof(
    fc.integer({ min: -1, max: 2 ** 45 }).map(String),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
    fc.constantFrom('0', '007', '-0', '999999999999999', '1000000000000000', '9007199254740991', '9007199254740992'),
  );

  it('answers exactly what BigInt answers, or nothing', () => {
    fc.assert(
      fc.property(decimal, decimal, fc.integer({ min: -(2 ** 31), max: 2 ** 31 }), (a, b, delta) => {
        const sum = addExact(a, delta);
        if (sum !== undefined) expect(sum).toBe((BigInt(a) + BigInt(delta)).toString());
        if (/^-?\d{1,15}$/.test(a)) expect(sum).toBeDefined();
        const order = compareExact(a, b);
        if (order !== undefined) expect(order).toBe(BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0);
      }),
      { numRuns: 3_000 },
    );
    expect(addExact(undefined, 1)).toBeUndefined();
    expect(addExact(7, 1)).toBeUndefined(); // a number takes the Long path, which accepts it
    expect(addExact('1e3', 1)).toBeUndefined();
    expect(compareExact('5', 5)).toBeUndefined();
  });

  it('a batch keeps the messages at or after the fetched offset, a resolved offset is the next one', () => {
    const messages = ['8', '9', '10', '11'].map((offset) => ({ offset }));
    expect(new Batch('t', '10', { partition: 0, highWatermark: '12', messages, abortedTransactions: [] }).messages).toEqual([
      { offset: '10' },
      { offset: '11' },
    ]);
    const big = ['9007199254740991', '9007199254740992', '9007199254740993'].map((offset) => ({ offset }));
    expect(
      new Batch('t', '9007199254740992', { partition: 0, highWatermark: '9007199254740994', messages: big, abortedTransactions: [] })
        .messages,
    ).toEqual(big.slice(1));
    const manager = new OffsetManager({ memberAssignment: { t: [0, 1] } });
    manager.resolveOffset({ topic: 't', partition: 0, offset: '41' });
    manager.resolveOffset({ topic: 't', partition: 1, offset: '9007199254740992' });
    expect(manager.resolvedOffsets.t).toEqual({ 0: '42', 1: '9007199254740993' });
  });
});
