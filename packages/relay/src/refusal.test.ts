import { describe, expect, it } from 'vitest';
import type { PublishMessage } from './publisher.js';
import { bytesOver } from './refusal.js';

// What the relay compares with maxMessageBytes: key, value and header bytes (UTF-8), 2 bytes per
// header and 64 bytes of record and batch overhead.
type Sized = Pick<PublishMessage, 'key' | 'value' | 'headers'>;
const exactBytes = (m: Sized) =>
  64 +
  Buffer.byteLength(m.key) +
  Buffer.byteLength(m.value) +
  Object.entries(m.headers).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v) + 2, 0);

describe('bytesOver', () => {
  const messages: Sized[] = [
    { key: 'tenant-1/email/ada@example.com', value: 'x'.repeat(900), headers: { 'notification-id': 'ntf_1', attempt: '1' } },
    { key: 'ключ', value: 'é'.repeat(400), headers: { 'tenant-id': 'τ' } }, // 2 bytes per character
    { key: 'k', value: '€'.repeat(300), headers: {} }, // 3 bytes per UTF-16 unit: the bound is exact
    { key: 'k', value: '😀'.repeat(200), headers: { h: '😀' } }, // 4 bytes per surrogate pair
  ];

  it('is the exact size when over the limit, and 0 when the message fits, at every limit around its size', () => {
    for (const m of messages) {
      const size = exactBytes(m);
      for (let limit = size - 3; limit <= size + 3; limit++)
        expect(bytesOver(m, limit), `${m.key} at ${limit}`).toBe(size > limit ? size : 0);
      expect(bytesOver(m, 0)).toBe(size);
      expect(bytesOver(m, 1_000_000)).toBe(0);
    }
  });
});
