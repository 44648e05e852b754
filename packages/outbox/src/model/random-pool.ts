import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let offset = 0;

/**
 * `n` bytes from the operating system's CSPRNG, as `crypto.randomBytes(n)` gives, served from a
 * 4 KiB pool filled in one call. On Node 20 each `randomBytes` call costs ~5 µs whatever its size
 * (a crypto job per call): three per API request (request id, trace id, span id) were 2.1 % of
 * the API process's busy time under POST /v1/notifications load (BENCHMARKS.md session 8), and
 * one per `enqueue()` (the id's 80 random bits) ~5 % of its client CPU. Each byte is handed out
 * once. The result is a view of the pool: encode it at once, do not keep or write to it.
 */
export function pooledRandomBytes(n: number): Buffer {
  if (n > POOL_BYTES) return randomFillSync(Buffer.alloc(n));
  if (offset + n > pool.length) {
    pool = randomFillSync(Buffer.allocUnsafe(POOL_BYTES)); // a new buffer: earlier views keep their bytes
    offset = 0;
  }
  const bytes = pool.subarray(offset, offset + n);
  offset += n;
  return bytes;
}
