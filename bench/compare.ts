// `node bench/dist/compare.js <before> <after>`: before/after per figure from two result sets.
// Each argument is a scenario JSON file (bench/results/end-to-end.json) or a directory of them
// (bench/results/quick, a copy of an earlier run, an `env-…` run). Figures are matched by scenario
// and id; the change column is after ÷ before (for a ratio figure, of the paired ratio).
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { JudgedFigure, ScenarioReport } from './lib/report.js';
import { round } from './lib/stats.js';

function load(target: string): Map<string, ScenarioReport> {
  const files = statSync(target).isDirectory()
    ? readdirSync(target)
        .filter((f) => f.endsWith('.json'))
        .map((f) => path.join(target, f))
    : [target];
  const out = new Map<string, ScenarioReport>();
  for (const f of files) {
    const r = JSON.parse(readFileSync(f, 'utf8')) as ScenarioReport;
    if (typeof r.scenario === 'string' && Array.isArray(r.figures)) out.set(r.scenario, r);
  }
  return out;
}

function show(f: JudgedFigure | undefined): string {
  if (!f) return '—';
  const ratio = f.ratio !== undefined ? ` (${round(f.ratio)}×)` : '';
  const verdict = f.pass === undefined ? '' : f.pass ? ' pass' : ' MISS';
  return `${round(f.value).toLocaleString('en-US')} ${f.unit}${ratio}${verdict}`.replace(/ +/g, ' ').trim();
}

/** Renders one row per figure present in either set. */
export function compare(before: Map<string, ScenarioReport>, after: Map<string, ScenarioReport>): string {
  const rows: string[][] = [['scenario', 'figure', 'before', 'after', 'after ÷ before']];
  for (const scenario of new Set([...before.keys(), ...after.keys()])) {
    const b = new Map((before.get(scenario)?.figures ?? []).map((f) => [f.id, f]));
    const a = new Map((after.get(scenario)?.figures ?? []).map((f) => [f.id, f]));
    for (const id of new Set([...b.keys(), ...a.keys()])) {
      const fb = b.get(id);
      const fa = a.get(id);
      const vb = fb?.ratio ?? fb?.value;
      const va = fa?.ratio ?? fa?.value;
      const change = vb !== undefined && va !== undefined && vb !== 0 ? `${round(va / vb)}×` : '—';
      rows.push([scenario, (fa ?? fb)!.label, show(fb), show(fa), change]);
    }
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  const line = (r: string[]) => `| ${r.map((cell, c) => cell.padEnd(widths[c]!)).join(' | ')} |`;
  return [line(rows[0]!), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.slice(1).map(line)].join('\n');
}

const [beforeArg, afterArg] = process.argv.slice(2);
if (!beforeArg || !afterArg) {
  process.stderr.write('usage: node bench/dist/compare.js <before.json|dir> <after.json|dir>\n');
  process.exit(2);
}
process.stdout.write(`${compare(load(beforeArg), load(afterArg))}\n`);
