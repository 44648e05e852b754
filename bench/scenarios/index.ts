import { enqueueScenario } from './enqueue.js';
import type { Scenario } from './types.js';

/** Every scenario, in the order `pnpm bench` runs them. */
export const SCENARIOS: readonly Scenario[] = [enqueueScenario];
