import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';

// kafkajs checksums every record batch it produces with this function; patches/kafkajs@2.2.4.patch
// replaces its one-byte-per-step loop with slicing-by-8. A wrong checksum makes the broker refuse
// every produce request (CORRUPT_MESSAGE), so the patched function must equal the textbook one.
const crc32C = createRequire(import.meta.url)('kafkajs/src/protocol/recordBatch/crc32C/crc32C.js') as (buffer: Buffer) => number;

/** CRC-32C bit by bit (reflected polynomial 0x82F63B78): slow, obviously right. */
function reference(buffer: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of buffer) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

describe('kafkajs CRC-32C (patched)', () => {
  it('gives the standard check value and the RFC 3720 test vectors', () => {
    expect(crc32C(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(crc32C(Buffer.alloc(32, 0))).toBe(0x8a9136aa);
    expect(crc32C(Buffer.alloc(32, 0xff))).toBe(0x62a8ab43);
    expect(crc32C(Buffer.from(Array.from({ length: 32 }, (_, i) => i)))).toBe(0x46dd794e);
    expect(crc32C(Buffer.alloc(0))).toBe(0);
  });

  it('equals the bitwise definition for every length 0-300 and at unaligned offsets', () => {
    for (let length = 0; length <= 300; length++) {
      const backing = randomBytes(length + 8);
      const offset = length % 8;
      const buffer = backing.subarray(offset, offset + length);
      expect(crc32C(buffer)).toBe(reference(buffer));
    }
  });
});
