#!/usr/bin/env node
// Prints statements and branches coverage per package from coverage/coverage-summary.json
// (written by `pnpm test:coverage` or `bash scripts/test.sh`), as the README's table.
import { readFileSync } from 'node:fs';
import path from 'node:path';

const summary = JSON.parse(readFileSync(path.resolve(process.argv[2] ?? 'coverage/coverage-summary.json'), 'utf8'));
const sums = new Map();
for (const [file, m] of Object.entries(summary)) {
  if (file === 'total') continue;
  const rel = path.relative(process.cwd(), file);
  const pkg = rel.startsWith('migrations/') ? 'migrations' : rel.split('/').slice(0, 2).join('/');
  const s = sums.get(pkg) ?? { st: 0, stc: 0, br: 0, brc: 0 };
  s.st += m.statements.total;
  s.stc += m.statements.covered;
  s.br += m.branches.total;
  s.brc += m.branches.covered;
  sums.set(pkg, s);
}
const pct = (c, t) => (t === 0 ? '100.00' : ((100 * c) / t).toFixed(2));
console.log('| package | statements | branches |\n| --- | --- | --- |');
for (const [pkg, s] of [...sums].sort()) console.log(`| \`${pkg}\` | ${pct(s.stc, s.st)} % | ${pct(s.brc, s.br)} % |`);
const t = summary.total;
console.log(`| all | ${t.statements.pct.toFixed(2)} % | ${t.branches.pct.toFixed(2)} % |`);
