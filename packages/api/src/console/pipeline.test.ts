import { describe, expect, it } from 'vitest';
import { type Bar, barChart } from './pipeline.js';

const render = async (bars: readonly Bar[], keys: readonly string[]) =>
  String(await barChart({ id: 'c', title: 'Chart', bars, keys, unit: 'per minute' }));

const minutes = (n: number): Bar[] =>
  Array.from({ length: n }, (_, i) => ({
    label: `12:${String(i).padStart(2, '0')}`,
    segments: [
      { key: 'sent', value: i % 7 },
      { key: 'dead', value: i % 3 },
    ],
  }));

describe('barChart', () => {
  it('sizes its text in CSS pixels: no viewBox scales the chart, its lengths across are percentages', async () => {
    const svg = await render(minutes(60), ['sent', 'dead']);
    expect(svg).not.toMatch(/viewBox/);
    expect(svg).toMatch(/<svg[^>]*\bwidth="100%"[^>]*\bheight="\d+"/);
    for (const m of svg.matchAll(/<rect x="([^"]+)" y="[^"]+" width="([^"]+)"/g)) {
      expect(m[1]).toMatch(/%$/);
      expect(m[2]).toMatch(/%$/);
    }
  });

  it('labels a time series under six of its bars at most, the first from its left edge', async () => {
    const svg = await render(minutes(60), ['sent', 'dead']);
    const labels = [...svg.matchAll(/<text x="([^"]+)" y="\d+" text-anchor="(\w+)">([^<]+)<\/text>/g)].map((m) => [m[3], m[2]]);
    expect(labels).toEqual([
      ['12:00', 'start'],
      ['12:10', 'middle'],
      ['12:20', 'middle'],
      ['12:30', 'middle'],
      ['12:40', 'middle'],
      ['12:50', 'middle'],
    ]);
    // The legend is HTML, which wraps on a narrow screen.
    expect(svg).toMatch(/<ul class="legend">\s*<li><span class="swatch" style="background:#1e7d3a"><\/span>sent<\/li>/);
  });

  it('lays a few bars across, each under its own label and figure, so a long name has the whole width', async () => {
    const svg = await render(
      [
        { label: 'notify-run.requests', segments: [{ key: 'lag', value: 40 }] },
        { label: 'notify-run.retry.30s', segments: [{ key: 'lag', value: 10 }] },
      ],
      ['lag'],
    );
    expect([...svg.matchAll(/<text x="0" y="\d+">([^<]+)<\/text>/g)].map((m) => m[1])).toEqual([
      'notify-run.requests: 40',
      'notify-run.retry.30s: 10',
    ]);
    expect([...svg.matchAll(/<rect x="([^"]+)" y="[^"]+" width="([^"]+)"/g)].map((m) => m[2])).toEqual(['100.00%', '25.00%']);
    expect(svg).not.toContain('class="legend"'); // one key: nothing to tell apart
  });
});
