import { describe, expect, it } from 'vitest';
import { judge, renderTable } from './report.js';

describe('judge', () => {
  it('computes the ratio to the baseline and passes a ratio target only when it is met', () => {
    const figure = {
      id: 'x',
      label: 'x',
      value: 800,
      unit: '/s',
      baseline: { label: 'b', value: 1000 },
      targets: [{ on: 'ratio', op: '>=', value: 0.8 }],
    } as const;
    const f = judge(figure);
    expect(f.ratio).toBeCloseTo(0.8);
    expect(f.pass).toBe(true);
    expect(judge({ ...figure, value: 799 }).pass).toBe(false);
  });

  it('prefers a paired ratio (median of per-round ratios) over the ratio of the medians', () => {
    const figure = {
      id: 'x',
      label: 'x',
      value: 600,
      unit: '/s',
      baseline: { label: 'b', value: 1000 },
      targets: [{ on: 'ratio', op: '>=', value: 0.7 }],
    } as const;
    expect(judge(figure).pass).toBe(false);
    expect(judge({ ...figure, ratio: 0.8 })).toMatchObject({ ratio: 0.8, pass: true });
  });

  it('needs every target: a value target and a ratio target together', () => {
    const base = { id: 'e2e', label: 'e2e', unit: '/s', baseline: { label: 'pg-boss', value: 1000 } };
    const targets = [
      { on: 'value', op: '>=', value: 3000 },
      { on: 'ratio', op: '>=', value: 3 },
    ] as const;
    expect(judge({ ...base, value: 3500, targets }).pass).toBe(true);
    expect(judge({ ...base, value: 2900, targets }).pass).toBe(false);
    expect(judge({ ...base, value: 3500, baseline: { label: 'pg-boss', value: 1200 }, targets }).pass).toBe(false);
  });

  it('misses a target it cannot evaluate (no baseline, NaN) instead of passing it', () => {
    expect(judge({ id: 'x', label: 'x', value: 5, unit: '', targets: [{ on: 'ratio', op: '>=', value: 1 }] }).pass).toBe(false);
    expect(judge({ id: 'x', label: 'x', value: Number.NaN, unit: 'ms', targets: [{ on: 'value', op: '<=', value: 100 }] }).pass).toBe(
      false,
    );
  });

  it('leaves pass undefined without a target', () => {
    expect(judge({ id: 'x', label: 'x', value: 1, unit: 'ms' }).pass).toBeUndefined();
  });
});

describe('renderTable', () => {
  it('prints one row per figure with baseline, ratio, target and verdict, and the error of a failed scenario', () => {
    const table = renderTable([
      {
        scenario: 'enqueue',
        mode: 'quick',
        startedAt: '',
        durationMs: 0,
        machine: {},
        figures: [
          judge({
            id: 'a',
            label: 'enqueue() tx/s',
            value: 500,
            unit: '/s',
            baseline: { label: 'plain', value: 1000 },
            targets: [{ on: 'ratio', op: '>=', value: 0.8 }],
          }),
        ],
        peakRssMiB: { worker: 100 },
        details: {},
      },
      {
        scenario: 'relay',
        mode: 'quick',
        startedAt: '',
        durationMs: 0,
        machine: {},
        figures: [],
        peakRssMiB: {},
        details: {},
        error: 'broker down\nstack',
      },
    ]);
    expect(table).toContain('| enqueue  | enqueue() tx/s');
    expect(table).toMatch(/500 \/s\s+\| 1,000 \/s \(plain\)\s+\| 0\.5×\s+\| ≥ 0\.8× base\s+\| MISS/);
    expect(table).toMatch(/peak RSS: worker\s+\| 100 MiB/);
    expect(table).toMatch(/relay\s+\| ERROR\s+\| broker down\s/);
    expect(table).not.toContain('stack');
  });
});
