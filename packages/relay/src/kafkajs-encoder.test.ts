import { createRequire } from 'node:module';
import { afterEach, describe, expect, it, vi } from 'vitest';

// kafkajs builds every request it sends with its Encoder; patches/kafkajs@2.2.4.patch makes the
// Encoder take its buffers from Buffer.allocUnsafe instead of Buffer.alloc (no zero-filled
// ArrayBuffer per record and per header). That is sound only if every byte an encoder hands out
// was written first: here the "uninitialised" memory is made to hold a pattern, and two patterns
// must give the same bytes, which decode back to what was encoded. The patch also writes varints
// straight into the buffer: they must be the bytes kafkajs' own array-based loop produced.
const require = createRequire(import.meta.url);
type Encoder = { readonly buffer: Buffer };
type VarIntEncoder = Encoder & {
  writeUVarInt(value: number): VarIntEncoder;
  writeVarInt(value: number): VarIntEncoder;
  writeVarLong(value: number): VarIntEncoder;
};
const EncoderClass = require('kafkajs/src/protocol/encoder.js') as (new () => VarIntEncoder) & { sizeOfVarLong(value: number): number };
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0/index.js') as { RecordBatch: (args: object) => Promise<Encoder> };
const Record = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (args: object) => Encoder;
const Decoder = require('kafkajs/src/protocol/decoder.js') as new (buffer: Buffer) => unknown;
const decodeBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder.js') as (decoder: unknown) => Promise<{
  records: { key: Buffer; value: Buffer; headers: Record<string, Buffer> }[];
}>;

const HEADERS = {
  'message-type': 'notification.deliver',
  'notification-id': 'ntf_01JXYZ0000000000000000000',
  'tenant-id': 'acme',
  channel: 'webhook',
  attempt: '1',
  'due-at': '2026-12-03T09:00:00.000Z',
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
};

/** A record batch of `count` messages, the last one larger than an encoder's first 512 bytes (so it grows). */
async function encodeBatch(count: number): Promise<Buffer> {
  const records = Array.from({ length: count }, (_, i) =>
    Record({
      offsetDelta: i,
      timestampDelta: 0,
      key: Buffer.from(`acme/webhook/recipient-${i}`),
      value: Buffer.from(i === count - 1 ? 'é'.repeat(3_000) : `{"v":1,"n":${i}}`),
      headers: HEADERS,
    }),
  );
  const batch = await RecordBatch({
    firstTimestamp: 1_764_750_000_000,
    maxTimestamp: 1_764_750_000_000,
    lastOffsetDelta: count - 1,
    records,
  });
  return batch.buffer;
}

/** Runs `encode` while Buffer.allocUnsafe hands out memory filled with `byte` (as reused memory would hold garbage). */
async function withDirtyMemory(byte: number, encode: () => Promise<Buffer>): Promise<Buffer> {
  const allocUnsafe = Buffer.allocUnsafe.bind(Buffer);
  const spy = vi.spyOn(Buffer, 'allocUnsafe').mockImplementation((size: number) => allocUnsafe(size).fill(byte));
  try {
    return Buffer.from(await encode());
  } finally {
    spy.mockRestore();
  }
}

/** kafkajs 2.2.4's writeUVarInt, unpatched: LEB128 of the value as an unsigned 32-bit integer. */
function uvarint(value: number): number[] {
  const bytes: number[] = [];
  while ((value & 0xffffff80) !== 0) {
    bytes.push((value & 0x7f) | 0x80);
    value >>>= 7;
  }
  bytes.push(value & 0x7f);
  return bytes;
}

/** A ZigZag varint of a 64-bit value, in BigInt (the definition kafkajs' Long path implements). */
function varlong(value: number): number[] {
  let v = BigInt.asUintN(64, (BigInt(value) << 1n) ^ (BigInt(value) >> 63n));
  const bytes: number[] = [];
  while (v >= 0x80n) {
    bytes.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  bytes.push(Number(v));
  return bytes;
}

afterEach(() => vi.restoreAllMocks());

describe('kafkajs Encoder (patched: allocUnsafe)', () => {
  it('takes its buffers from allocUnsafe, and never hands out a byte it did not write', async () => {
    const spy = vi.spyOn(Buffer, 'allocUnsafe');
    await encodeBatch(3);
    expect(spy).toHaveBeenCalled(); // the patch is applied
    spy.mockRestore();
    for (const count of [1, 2, 20]) {
      const zeros = await withDirtyMemory(0x00, () => encodeBatch(count));
      const ones = await withDirtyMemory(0xff, () => encodeBatch(count));
      expect(ones.equals(zeros)).toBe(true);
    }
  });

  it('encodes what decodes back to the same keys, values and headers', async () => {
    const bytes = await withDirtyMemory(0xa5, () => encodeBatch(20));
    const { records } = await decodeBatch(new Decoder(bytes));
    expect(records).toHaveLength(20);
    records.forEach((r, i) => {
      expect(r.key.toString()).toBe(`acme/webhook/recipient-${i}`);
      expect(r.value.toString()).toBe(i === 19 ? 'é'.repeat(3_000) : `{"v":1,"n":${i}}`);
      expect(Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, v.toString()]))).toEqual(HEADERS);
    });
  });

  it('writes varints as the original loop did, one after another, across a buffer growth', () => {
    const values = [0, 1, 63, 64, 127, 128, 255, 300, 16_383, 16_384, 2 ** 21 - 1, 2 ** 21, 2 ** 28, 2 ** 31 - 1, 2 ** 32 - 1];
    const signed = [-1, -64, -65, -(2 ** 31)];
    const encoder = new EncoderClass();
    const want: number[] = [];
    for (let round = 0; round < 40; round++) {
      for (const v of values) {
        encoder.writeUVarInt(v);
        want.push(...uvarint(v));
      }
      for (const v of signed) {
        encoder.writeVarInt(v);
        want.push(...uvarint((v << 1) ^ (v >> 31))); // zigzag
      }
    }
    expect(want.length).toBeGreaterThan(512); // the buffer grew on the way
    expect([...encoder.buffer]).toEqual(want);
  });

  it('writes varlongs (a record timestamp delta) as 64-bit ZigZag varints, inside and outside the int32 range', () => {
    const values = [
      0,
      1,
      -1,
      63,
      -64,
      64,
      2 ** 30,
      2 ** 31 - 1,
      -(2 ** 31),
      2 ** 31,
      -(2 ** 31) - 1,
      2 ** 32,
      1_764_750_000_000,
      -1_764_750_000_000,
    ];
    for (const v of values) {
      const bytes = [...new EncoderClass().writeVarLong(v).buffer];
      expect(bytes, String(v)).toEqual(varlong(v));
      expect(EncoderClass.sizeOfVarLong(v), String(v)).toBe(bytes.length);
    }
  });

  it('encodes a header given as an array of values as one header per value, in order', async () => {
    const record = Record({ key: Buffer.from('k'), value: Buffer.from('v'), headers: { a: ['1', '2'], b: '3' } });
    const batch = await RecordBatch({ firstTimestamp: 1, maxTimestamp: 1, records: [record] });
    const { records } = await decodeBatch(new Decoder(batch.buffer));
    const headers = records[0]!.headers as unknown as Record<string, Buffer | Buffer[]>;
    expect((headers.a as Buffer[]).map(String)).toEqual(['1', '2']);
    expect(String(headers.b)).toBe('3');
  });
});
