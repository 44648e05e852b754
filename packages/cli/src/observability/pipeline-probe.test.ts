import { describe, expect, it } from 'vitest';
import { ManualClock } from '@notify/runtime/testing';
import { lagReachabilityLog } from './pipeline-probe.js';

function capture() {
  const lines: { level: string; msg: string | undefined }[] = [];
  const at = (level: string) => (_obj: object, msg?: string) => void lines.push({ level, msg });
  const logger = { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug'), child: () => logger };
  return { logger, lines };
}

describe('lagReachabilityLog', () => {
  it('warns once when readings start failing and says once when they work again, whatever the number of readings', () => {
    const { logger, lines } = capture();
    const log = lagReachabilityLog(logger, new ManualClock(), 300_000);
    log.succeeded();
    for (let i = 0; i < 5; i++) log.failed(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:1'));
    log.succeeded();
    log.succeeded();
    expect(lines.map((l) => l.level)).toEqual(['warn', 'info']);
    expect(lines[0]!.msg).toMatch(/^consumer lag: Kafka does not answer/);
    expect(lines[1]!.msg).toBe('consumer lag: Kafka answers again');
  });

  it('a broker that flaps within the interval logs one pair, and the next outage after it warns again', () => {
    const { logger, lines } = capture();
    const clock = new ManualClock();
    const log = lagReachabilityLog(logger, clock, 300_000);
    log.failed(new Error('down'));
    log.succeeded();
    clock.advance(60_000);
    log.failed(new Error('down'));
    log.succeeded();
    expect(lines.map((l) => l.level)).toEqual(['warn', 'info']);
    clock.advance(240_000);
    log.failed(new Error('down'));
    expect(lines.map((l) => l.level)).toEqual(['warn', 'info', 'warn']);
  });
});
