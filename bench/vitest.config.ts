import { defineConfig } from 'vitest/config';
import { sourceConditions } from '../vitest.config.js';

// The harness's own pure helpers (statistics, verdicts, profile summaries): no I/O, no timing.
// `pnpm vitest run --config bench/vitest.config.ts`
export default defineConfig({
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions } },
  test: {
    name: 'bench',
    root: new URL('..', import.meta.url).pathname,
    include: ['bench/**/*.test.ts'],
  },
});
