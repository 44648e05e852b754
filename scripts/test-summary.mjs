// Prints the suite's closing line from Vitest's JSON report: "N passed, N failed, N skipped".
// Exits 1 when the report is missing or no test ran, so an empty run never looks green.
import { readFileSync } from 'node:fs';

let report;
try {
  report = JSON.parse(readFileSync(process.argv[2], 'utf8'));
} catch {
  console.log('0 passed, 1 failed');
  console.error('no Vitest report was written');
  process.exit(1);
}
const skipped = report.numPendingTests + report.numTodoTests;
console.log(`${report.numPassedTests} passed, ${report.numFailedTests} failed, ${skipped} skipped`);
if (report.numTotalTests === 0) process.exit(1);
