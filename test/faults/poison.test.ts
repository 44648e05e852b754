/**
 * CI subset: poison messages produced straight into `<prefix>.requests` and a retry topic while
 * real notifications flow (garbage bytes, invalid UTF-8, wrong schema version, unknown
 * notification, a 900 KiB value, 100,000-deep JSON, a tombstone, hostile headers). Each must
 * land on `<prefix>.dlq` with a `dlq-reason`, the dispatcher must never exit, and every real
 * notification must still be delivered (the audit).
 */
import type { KafkaMessage } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { HEADERS } from '@notify/contract';
import { runScenario } from '../support/chaos/scenario.js';
import { POISON, poisonScenario } from '../support/chaos/scenarios.js';
import { expectNothingLost } from '../support/chaos/report.js';
import { chaosSeed } from '../support/chaos/stack.js';

describe('poison messages', () => {
  it('each one is dead-lettered with a reason; the consumer stays up and delivers the real traffic', async ({ task }) => {
    const sink: { dlq?: KafkaMessage[] } = {};
    const result = await runScenario(poisonScenario({ notifications: 200, spreadMs: 6_000, seed: chaosSeed() }, sink));
    const dlq = sink.dlq ?? [];
    const reasons = dlq.map(
      (m) =>
        `${m.headers?.['chaos-poison']?.toString()} ← ${m.headers?.[HEADERS.dlqSourceTopic]?.toString()}: ${m.headers?.[HEADERS.dlqReason]?.toString()}`,
    );
    console.info(`[chaos] dead letters:\n  ${reasons.join('\n  ')}`);
    expectNothingLost(task, result);
    // Every poison message, from both topics, is on the DLQ exactly as injected, with a reason.
    for (const p of POISON) {
      const letters = dlq.filter((m) => m.headers?.['chaos-poison']?.toString() === p.name);
      expect(letters.length, `dead letters for "${p.name}"`).toBe(2);
      for (const l of letters) {
        expect(l.headers?.[HEADERS.dlqReason]?.toString().length, p.name).toBeGreaterThan(0);
        if (p.value === null) expect(l.value, p.name).toBeNull();
        else expect(l.value?.equals(p.value), `${p.name}: original bytes kept`).toBe(true);
      }
    }
    expect(dlq).toHaveLength(POISON.length * 2);
    expect(result.report.row.sent).toBe(200);
  }, 180_000);
});
