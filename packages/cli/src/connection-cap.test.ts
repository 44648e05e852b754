import { Server } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from '@notify/runtime';
import { capConnections } from './connection-cap.js';

// The drops themselves are Node's (test/api-connections.test.ts drives them with real sockets);
// here, what becomes of them: a count per drop, and warnings no more often than the window.
function warnings(): { logger: Logger; lines: { fields: object; msg: string | undefined }[] } {
  const lines: { fields: object; msg: string | undefined }[] = [];
  const logger: Logger = {
    error() {},
    warn: (fields, msg) => void lines.push({ fields, msg }),
    info() {},
    debug() {},
    child: () => logger,
  };
  return { logger, lines };
}

describe('capConnections', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sets maxConnections, counts every drop, warns at the first and then once per window with the count since', () => {
    const server = new Server();
    const { logger, lines } = warnings();
    let dropped = 0;
    capConnections(
      server,
      { maxConnections: 3, variable: 'NOTIFY_API_MAX_CONNECTIONS', warnEveryMs: 1_000 },
      { logger, onDrop: () => dropped++ },
    );
    expect(server.maxConnections).toBe(3);

    for (let i = 0; i < 4; i++) server.emit('drop');
    expect(dropped).toBe(4);
    expect(lines).toEqual([
      {
        fields: { dropped: 1, max_connections: 3 },
        msg: 'dropped 1 new connection at the cap of NOTIFY_API_MAX_CONNECTIONS=3 open connections',
      },
    ]);
    vi.advanceTimersByTime(999);
    expect(lines).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(lines[1]).toEqual({
      fields: { dropped: 3, max_connections: 3 },
      msg: 'dropped 3 new connections at the cap of NOTIFY_API_MAX_CONNECTIONS=3 open connections',
    });
    // A window without drops says nothing and ends: the next drop is told at once.
    vi.advanceTimersByTime(5_000);
    expect(lines).toHaveLength(2);
    server.emit('drop');
    expect(lines[2]?.fields).toEqual({ dropped: 1, max_connections: 3 });
    expect(dropped).toBe(5);
  });

  it('leaves the server uncapped with 0, and its window ends with the server', () => {
    const uncapped = new Server();
    capConnections(uncapped, { maxConnections: 0, variable: 'V' }, { logger: warnings().logger, onDrop: () => {} });
    expect(uncapped.maxConnections).toBeUndefined();
    expect(uncapped.listenerCount('drop')).toBe(0);

    const server = new Server();
    const { logger, lines } = warnings();
    capConnections(server, { maxConnections: 1, variable: 'V' }, { logger, onDrop: () => {} });
    server.emit('drop');
    server.emit('drop');
    expect(vi.getTimerCount()).toBe(1);
    server.emit('close');
    expect(vi.getTimerCount()).toBe(0);
    expect(lines).toHaveLength(1);
  });
});
