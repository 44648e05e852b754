import { describe, expect, it } from 'vitest';
import { createEmitter } from './events.js';
import type { Logger } from './logger.js';

interface TestEvents {
  purged: { readonly count: number };
  claimed: { readonly count: number };
}
const createTestEvents = (logger: Logger) => createEmitter<TestEvents>('test', logger);

function capturingLogger(): Logger & { errors: object[] } {
  const errors: object[] = [];
  const logger = {
    errors,
    error: (obj: object) => void errors.push(obj),
    warn() {},
    info() {},
    debug() {},
    child: () => logger,
  };
  return logger;
}

describe('createEmitter', () => {
  it('delivers payloads to every listener of the event and only that event', () => {
    const events = createTestEvents(capturingLogger());
    const seen: number[] = [];
    events.on('purged', ({ count }) => void seen.push(count));
    events.on('purged', ({ count }) => void seen.push(count * 10));
    events.on('claimed', () => void seen.push(-1));
    events.emit('purged', { count: 2 });
    expect(seen).toEqual([2, 20]);
  });

  it('a throwing or rejecting listener is logged and does not stop the others', async () => {
    const logger = capturingLogger();
    const events = createTestEvents(logger);
    const seen: string[] = [];
    events.on('purged', () => {
      throw new Error('boom');
    });
    events.on('purged', async () => {
      throw new Error('async boom');
    });
    events.on('purged', () => void seen.push('third'));
    expect(() => events.emit('purged', { count: 1 })).not.toThrow();
    expect(seen).toEqual(['third']);
    await new Promise((r) => setImmediate(r));
    expect(logger.errors).toHaveLength(2);
  });

  it('the returned function removes the listener', () => {
    const events = createTestEvents(capturingLogger());
    let calls = 0;
    const off = events.on('purged', () => void calls++);
    events.emit('purged', { count: 0 });
    off();
    events.emit('purged', { count: 0 });
    expect(calls).toBe(1);
  });
});
