// Test helpers of @notify/runtime.
export { ManualClock } from './manual-clock.js';
