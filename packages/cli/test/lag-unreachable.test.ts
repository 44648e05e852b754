import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { type NotifyServer, startNotifyProcess } from '../../../test/support/notify-process.js';
import { waitFor } from '../../../test/support/wait.js';

// The compiled `notify start --roles api` while Kafka never answers: its lag readings (every
// /metrics scrape) say so once, not once per scrape, and kafkajs's connection errors stay at debug.
vi.setConfig({ testTimeout: 120_000 });

let t: TestDatabase;
let notify: NotifyServer | undefined;

beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await notify?.stop();
  await t?.close();
});

interface LogLine {
  level?: string;
  msg?: string;
  component?: string;
}

const logLines = (output: string): LogLine[] =>
  output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);

describe('an API-only process while Kafka is down', () => {
  it('logs one warning about the lag source over several scrapes, and no kafkajs errors', async () => {
    notify = await startNotifyProcess(['--roles', 'api'], {
      DATABASE_URL: t.url,
      KAFKA_BROKERS: '127.0.0.1:1',
      PORT: '0',
      LOG_LEVEL: 'info',
    });
    let errors = 0;
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${notify.adminUrl}/metrics`);
      expect(res.status).toBe(200);
      // The error counter is rendered before the lag gauge collects: it shows the scrapes before this one.
      errors = Number(/^notify_metrics_collect_errors_total (\d+)/m.exec(await res.text())?.[1]);
    }
    // Every scrape read Kafka and failed (a failed reading is not cached).
    expect(errors).toBeGreaterThanOrEqual(3);
    const warned = await waitFor(
      () => {
        const found = logLines(notify!.output()).filter((l) => l.msg?.startsWith('consumer lag: Kafka does not answer'));
        return found.length > 0 ? found : undefined;
      },
      { message: 'the lag warning in the output' },
    );
    expect(warned).toEqual([expect.objectContaining({ level: 'warn' })]);
    const lines = logLines(notify.output());
    expect(lines.filter((l) => l.component === 'kafkajs')).toEqual([]);
    expect(lines.filter((l) => l.level === 'error')).toEqual([]);
    expect(lines.filter((l) => l.msg === 'metrics: reading the consumer lag failed')).toEqual([]);
    expect(await notify.stop()).toBe(0);
  });
});
