/**
 * CI subset: one SIGKILL of the relay and one of the dispatcher, each mid-run at a seeded moment,
 * with the real stack (`notify start --roles relay` and `--roles dispatcher` as child processes),
 * then the audit: nothing lost, every sent one received, attempt history intact, no outbox row
 * stranded. The full version (several kills each) is test/chaos/faults.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { runScenario } from '../support/chaos/scenario.js';
import { sigkillScenario } from '../support/chaos/scenarios.js';
import { expectNothingLost } from '../support/chaos/report.js';
import { chaosSeed } from '../support/chaos/stack.js';

describe('SIGKILL mid-run (one round each)', () => {
  it('relay: killed while publishing, restarted: nothing lost', async ({ task }) => {
    const result = await runScenario(sigkillScenario('relay', 1, { notifications: 300, spreadMs: 5_000, seed: chaosSeed() }));
    expectNothingLost(task, result);
    expect(result.report.row.sent).toBe(300);
  }, 180_000);

  it('dispatcher: killed while delivering, restarted: nothing lost', async ({ task }) => {
    const result = await runScenario(sigkillScenario('dispatcher', 1, { notifications: 300, spreadMs: 5_000, seed: chaosSeed() }));
    expectNothingLost(task, result);
    expect(result.report.row.sent).toBe(300);
  }, 180_000);
});
