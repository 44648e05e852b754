import fs from 'node:fs';
import path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import { type ChaosRow, formatChaosTable } from './audit.js';

/**
 * A vitest reporter for `pnpm test:chaos`: collects the `chaos` row every fault test attaches to
 * its task meta and prints the per-scenario table (scenario, notifications, lost, duplicates,
 * max lateness) after the run. Also writes it to .cache/chaos/last-run.{md,json}.
 */
export default class ChaosTableReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const rows: ChaosRow[] = [];
    for (const mod of testModules) {
      for (const test of mod.children.allTests()) {
        const row = (test.meta() as { chaos?: ChaosRow }).chaos;
        if (row) rows.push(row);
      }
    }
    if (rows.length === 0) return;
    const table = formatChaosTable(rows);
    process.stdout.write(`\nChaos scenarios (lost must be 0):\n${table}\n\n`);
    const dir = path.resolve('.cache', 'chaos');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'last-run.md'), `${table}\n`);
    fs.writeFileSync(path.join(dir, 'last-run.json'), `${JSON.stringify(rows, null, 2)}\n`);
  }
}
