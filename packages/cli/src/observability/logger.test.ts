import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { lines, destination };
}

describe('createLogger', () => {
  it('writes JSON lines with a level label, an ISO time and the service name', () => {
    const { lines, destination } = capture();
    createLogger({ level: 'info', destination, base: { role: 'api' } }).info({ notificationId: 'ntf_1' }, 'queued');
    expect(lines[0]).toMatchObject({ level: 'info', service: 'notify', role: 'api', notificationId: 'ntf_1', msg: 'queued' });
    expect(new Date(lines[0]!.time as string).toISOString()).toBe(lines[0]!.time);
  });
  it('redacts authorization headers, keys, passwords and bodies if someone logs them', () => {
    const { lines, destination } = capture();
    const log = createLogger({ level: 'info', destination });
    log.info({
      req: { headers: { authorization: 'Bearer nk_secret' } },
      headers: { authorization: 'Bearer nk_2' },
      key: 'nk_3',
      smtp: { password: 'pw' },
      body: 'hello',
    });
    const text = JSON.stringify(lines[0]);
    for (const secret of ['nk_secret', 'nk_2', 'nk_3', '"pw"', 'hello']) expect(text).not.toContain(secret);
  });
  it('honours the level', () => {
    const { lines, destination } = capture();
    createLogger({ level: 'warn', destination }).info({}, 'quiet');
    expect(lines).toHaveLength(0);
  });
});
