import { EventEmitter } from 'node:events';
import { silentLogger } from '@notify/runtime';
import type { Consumer } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/wait.js';
import { restartAfterFatalCrash } from './consumer-restart.js';

/** The part of a kafkajs consumer the restart uses: its CRASH event, connect, disconnect; run is the owner's. */
function standIn(connectFailures = 0) {
  const emitter = new EventEmitter();
  const calls: string[] = [];
  let failuresLeft = connectFailures;
  const consumer = {
    events: { CRASH: 'consumer.crash' },
    on: (event: string, listener: (e: unknown) => void) => emitter.on(event, listener),
    connect: async () => {
      calls.push('connect');
      if (failuresLeft-- > 0) throw new Error('Connection error: connect ECONNREFUSED');
    },
    disconnect: async () => {
      calls.push('disconnect');
    },
  } as unknown as Consumer;
  const crash = (restart: boolean) =>
    emitter.emit('consumer.crash', { payload: { error: new Error('Failed to find group coordinator'), restart } });
  return { consumer, calls, crash };
}

describe('restartAfterFatalCrash', () => {
  it('runs the consumer again after a crash kafkajs does not restart from', async () => {
    const { consumer, calls, crash } = standIn();
    restartAfterFatalCrash(consumer, {
      run: async () => void calls.push('run'),
      stopped: () => false,
      logger: silentLogger,
      minDelayMs: 1,
    });
    crash(false);
    await waitFor(() => calls.includes('run'), { message: 'the consumer to run again' });
    expect(calls).toEqual(['connect', 'run']);
  });

  it('keeps trying while the broker is down, then runs', async () => {
    const { consumer, calls, crash } = standIn(3);
    restartAfterFatalCrash(consumer, {
      run: async () => void calls.push('run'),
      stopped: () => false,
      logger: silentLogger,
      minDelayMs: 1,
      maxDelayMs: 4,
    });
    crash(false);
    await waitFor(() => calls.includes('run'), { message: 'the consumer to run again' });
    expect(calls).toEqual(['connect', 'disconnect', 'connect', 'disconnect', 'connect', 'disconnect', 'connect', 'run']);
  });

  it('leaves a crash kafkajs restarts itself, and does nothing once the owner stopped', async () => {
    const { consumer, calls, crash } = standIn();
    let stopped = false;
    restartAfterFatalCrash(consumer, {
      run: async () => void calls.push('run'),
      stopped: () => stopped,
      logger: silentLogger,
      minDelayMs: 1,
    });
    crash(true);
    stopped = true;
    crash(false);
    // Both would have acted within a few milliseconds; a later crash while running proves the listener still works.
    stopped = false;
    crash(false);
    await waitFor(() => calls.includes('run'), { message: 'the consumer to run again' });
    expect(calls).toEqual(['connect', 'run']);
  });
});
