import { batchEnqueueScenario } from './batch-enqueue.js';
import { endToEndScenario } from './end-to-end.js';
import { enqueueScenario } from './enqueue.js';
import { hotKeyScenario } from './hot-key.js';
import { httpEnqueueScenario } from './http-enqueue.js';
import { longTxScenario } from './long-tx.js';
import { relayScenario } from './relay.js';
import { retryHeavyScenario } from './retry-heavy.js';
import { soakScenario } from './soak.js';
import type { Scenario } from './types.js';

/** Every scenario, in the order `pnpm bench` runs them. */
export const SCENARIOS: readonly Scenario[] = [
  enqueueScenario,
  batchEnqueueScenario,
  httpEnqueueScenario,
  relayScenario,
  endToEndScenario,
  hotKeyScenario,
  longTxScenario,
  retryHeavyScenario,
  soakScenario,
];
