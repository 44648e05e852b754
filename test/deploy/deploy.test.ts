/**
 * The monitoring files in deploy/: Prometheus's own checker and unit tests pass on the alert
 * rules, and every metric the rules and the Grafana dashboard query is one a running
 * `notify start` really exports on its admin port. promtool comes from Debian's `prometheus`
 * package (`.ci/run` installs it); without it this test fails, it never skips.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { createTestKafka, stopNotifyAndCloseKafka, type TestKafka } from '../support/kafka.js';
import { type NotifyServer, ROOT, startNotifyProcess } from '../support/notify-process.js';

const run = promisify(execFile);
const PROMTOOL = process.env.PROMTOOL ?? 'promtool';
const ALERTS = path.join(ROOT, 'deploy/prometheus/alerts.yml');
const ALERT_TESTS = path.join(ROOT, 'deploy/prometheus/alerts.test.yml');
const DASHBOARD = path.join(ROOT, 'deploy/grafana/notify.json');

async function promtool(...args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await run(PROMTOOL, args, { cwd: path.dirname(ALERTS) });
    return `${stdout}${stderr}`;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stdout?: string; stderr?: string };
    if (e.code === 'ENOENT')
      throw new Error(`promtool not found (${PROMTOOL}): install Debian's prometheus package (.ci/run does) or set PROMTOOL`, {
        cause: err,
      });
    throw new Error(`promtool ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: err });
  }
}

/** Metric names in a text: ours (notify_*) and the standard Node.js ones. `up` is Prometheus's own and not exported by a target. */
function metricNames(text: string): Set<string> {
  return new Set(text.match(/\b(?:notify|process|nodejs)_[a-z0-9_]+\b/g) ?? []);
}

describe('deploy/prometheus/alerts.yml', () => {
  it('passes promtool check rules', async () => {
    expect(await promtool('check', 'rules', ALERTS)).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('fires as its unit tests say (promtool test rules)', async () => {
    expect(await promtool('test', 'rules', ALERT_TESTS)).toContain('SUCCESS');
  });

  it('has for:, a severity, a summary, a description and a runbook on every alert', () => {
    const alerts = readFileSync(ALERTS, 'utf8')
      .split(/\n\s+- alert: /)
      .slice(1);
    expect(alerts.length).toBeGreaterThanOrEqual(7);
    for (const a of alerts) {
      const name = a.split('\n')[0];
      for (const field of [
        /\n\s+for: \d+m/,
        /\n\s+severity: (warning|critical)/,
        /\n\s+summary: /,
        /\n\s+description: /,
        /\n\s+runbook: /,
      ]) {
        expect(a, `${name}: ${field}`).toMatch(field);
      }
    }
  });
});

describe('every metric the alerts and the dashboard query', () => {
  let t: TestDatabase;
  let kafka: TestKafka;
  let notify: NotifyServer;

  beforeAll(async () => {
    [t, kafka] = await Promise.all([createTestDatabase(), createTestKafka()]);
    notify = await startNotifyProcess([], {
      DATABASE_URL: t.url,
      KAFKA_BROKERS: kafka.brokers.join(','),
      NOTIFY_TOPIC_PREFIX: kafka.prefix,
      NOTIFY_TOPIC_PARTITIONS: '1',
      PORT: '0',
    });
  }, 120_000);

  afterAll(async () => {
    await stopNotifyAndCloseKafka(kafka, notify);
    await t?.close();
  }, 60_000);

  it('is exported on the admin port of a running notify start', async () => {
    const res = await fetch(`${notify.adminUrl}/metrics`);
    expect(res.status).toBe(200);
    const exposition = await res.text();
    const exported = new Map<string, string>();
    for (const m of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) exported.set(m[1]!, m[2]!);

    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };
    const queried = new Map<string, string>(); // metric → where
    for (const p of dashboard.panels)
      for (const target of p.targets) for (const n of metricNames(target.expr)) queried.set(n, `dashboard "${p.title}"`);
    for (const n of metricNames(readFileSync(ALERTS, 'utf8'))) queried.set(n, 'alerts.yml');
    // The figures the issue names are all there (guards against a pattern that finds nothing).
    for (const n of [
      'notify_outbox_lag_seconds',
      'notify_kafka_consumer_lag_messages',
      'notify_dead_total',
      'notify_dead_letters_total',
      'notify_relay_published_total',
      'notify_ready',
    ]) {
      expect([...queried.keys()]).toContain(n);
    }

    const missing = [...queried].filter(([name]) => {
      const base = name.replace(/_(bucket|sum|count)$/, '');
      return !exported.has(name) && !(exported.get(base) === 'histogram' && base !== name);
    });
    expect(missing.map(([n, where]) => `${n} (${where})`)).toEqual([]);
    // The readiness gauge reports both checks of this healthy process.
    expect(exposition).toMatch(/^notify_ready\{check="database"\} 1$/m);
    expect(exposition).toMatch(/^notify_ready\{check="kafka"\} 1$/m);
  }, 60_000);
});
