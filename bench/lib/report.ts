import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { round } from './stats.js';

/** A target the bench reports against (tests never assert these). */
interface Target {
  /** Whether the target bounds the figure itself or its ratio to the baseline. */
  readonly on: 'value' | 'ratio';
  readonly op: '>=' | '<=';
  readonly value: number;
}

/** One measured figure, next to the baseline measured in the same run. */
export interface Figure {
  /** Stable key inside the scenario, e.g. `c16.rate`. */
  readonly id: string;
  /** What was measured, e.g. `enqueue() tx/s, 16 clients`. */
  readonly label: string;
  readonly value: number;
  /** `/s`, `ms`, `MiB`, `%`, `×`. */
  readonly unit: string;
  readonly baseline?: { readonly label: string; readonly value: number };
  /**
   * The ratio to the baseline when it was measured pairwise (the median of per-round value/baseline
   * ratios, each round's pair run back to back). Default: value / baseline.
   */
  readonly ratio?: number;
  readonly targets?: readonly Target[];
  /** Why the figure is what it is, or a caveat (e.g. "quick mode: 30 s soak"). */
  readonly note?: string;
}

/** A figure with its ratio and verdict worked out. */
export interface JudgedFigure extends Figure {
  /** The paired ratio, else value / baseline (for latencies too: below 1 means faster than the baseline). */
  readonly ratio?: number;
  /** undefined when the figure has no target. */
  readonly pass?: boolean;
}

/** What a scenario hands back. */
export interface ScenarioOutcome {
  readonly figures: readonly Figure[];
  /** Peak RSS (bytes) of the process that is "the service" in this scenario, by label. */
  readonly peakRss?: Readonly<Record<string, number>>;
  /** Anything else worth keeping in the JSON: configuration, raw rounds, distributions. */
  readonly details?: Record<string, unknown>;
}

/** What `bench/results/<scenario>.json` holds. */
export interface ScenarioReport {
  readonly scenario: string;
  readonly mode: 'full' | 'quick';
  readonly startedAt: string;
  readonly durationMs: number;
  readonly machine: Record<string, unknown>;
  /** 1-minute load average when the scenario started and ended: how busy the shared machine was. */
  readonly loadAverage?: { readonly start: number; readonly end: number };
  readonly figures: readonly JudgedFigure[];
  readonly peakRssMiB: Readonly<Record<string, number>>;
  readonly details: Record<string, unknown>;
  readonly error?: string;
}

/** Works out ratios and pass/miss. */
export function judge(figure: Figure): JudgedFigure {
  const ratio = figure.ratio ?? (figure.baseline && figure.baseline.value !== 0 ? figure.value / figure.baseline.value : undefined);
  if (!figure.targets || figure.targets.length === 0) return { ...figure, ...(ratio !== undefined ? { ratio } : {}) };
  const pass = figure.targets.every((t) => {
    const x = t.on === 'ratio' ? ratio : figure.value;
    if (x === undefined || !Number.isFinite(x)) return false;
    return t.op === '>=' ? x >= t.value : x <= t.value;
  });
  return { ...figure, ...(ratio !== undefined ? { ratio } : {}), pass };
}

function formatValue(value: number, unit: string): string {
  if (!Number.isFinite(value)) return 'n/a';
  const v = round(value).toLocaleString('en-US');
  return unit === '×' ? `${v}×` : unit === '%' ? `${v} %` : unit === '' ? v : `${v} ${unit}`;
}

function formatTarget(t: Target, unit: string): string {
  const op = t.op === '>=' ? '≥' : '≤';
  return t.on === 'ratio' ? `${op} ${t.value}× base` : `${op} ${formatValue(t.value, unit)}`;
}

/** Writes one scenario's JSON. */
export function writeReport(dir: string, report: ScenarioReport): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${report.scenario}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  return file;
}

/** The table printed at the end of a run (also pasted into BENCHMARKS.md). Markdown, so it reads in a terminal and in the doc. */
export function renderTable(reports: readonly ScenarioReport[]): string {
  const rows: string[][] = [['scenario', 'figure', 'value', 'baseline', 'ratio', 'target', 'result']];
  for (const r of reports) {
    if (r.error) rows.push([r.scenario, 'ERROR', r.error.split('\n')[0]!.slice(0, 120), '', '', '', 'error']);
    for (const f of r.figures) {
      rows.push([
        r.scenario,
        f.label,
        formatValue(f.value, f.unit),
        f.baseline ? `${formatValue(f.baseline.value, f.unit)} (${f.baseline.label})` : '—',
        f.ratio !== undefined ? `${round(f.ratio)}×` : '—',
        f.targets ? f.targets.map((t) => formatTarget(t, f.unit)).join(', ') : '—',
        f.pass === undefined ? '—' : f.pass ? 'pass' : 'MISS',
      ]);
    }
    for (const [label, value] of Object.entries(r.peakRssMiB)) {
      rows.push([r.scenario, `peak RSS: ${label}`, `${round(value)} MiB`, '—', '—', '—', '—']);
    }
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) => `| ${row.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(rows[0]!), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.slice(1).map(line)].join('\n');
}
