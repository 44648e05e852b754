import { html } from 'hono/html';
import type { Html } from './layout.js';

/**
 * The pipeline figures the console shows that belong to other roles: the relay's outbox lag and
 * the dispatcher's Kafka consumer lag. `notify start` passes one built from the same functions
 * its metrics use (notify_outbox_lag_seconds, notify_outbox_unpublished, and the consumer
 * group's offsets), since the API must not import the relay or the dispatcher.
 */
export interface PipelineProbe {
  /** Age of the oldest unpublished outbox row (null when none) and how many rows wait. */
  outboxLag(): Promise<{ readonly oldestAgeMs: number | null; readonly unpublished: number }>;
  /** Messages the dispatcher group has not consumed yet, per topic. */
  consumerLag(): Promise<readonly { readonly topic: string; readonly lag: number }[]>;
}

/** One bar of a chart. */
export interface Bar {
  readonly label: string;
  readonly segments: readonly { readonly key: string; readonly value: number }[];
}

/** Colours of outcomes, each ≥ 3:1 against white (WCAG AA for graphics) and named in the legend. */
/** @internal Exported for its tests. */
export const OUTCOME_COLOURS: Readonly<Record<string, string>> = {
  sent: '#1e7d3a',
  transient: '#a35200',
  permanent: '#b3261e',
  expired: '#6b3fa0',
  suppressed: '#4d4d4d',
  dead: '#b3261e',
  lag: '#0b57d0',
};

/**
 * What a chart shows, in words: each bar's figure when there are few, else the totals by key and
 * the highest bar; and where the figures are as a table (`table`, its caption).
 */
function chartSummary(opts: { bars: readonly Bar[]; keys: readonly string[]; unit: string; table?: string }): string {
  const total = (b: Bar) => b.segments.reduce((s, x) => s + x.value, 0);
  const parts: string[] = [];
  if (opts.bars.length <= 12) {
    parts.push(opts.bars.map((b) => `${b.label}: ${total(b)}`).join('; ') + ` (${opts.unit}).`);
  } else {
    const byKey = opts.keys.map((k) => `${k} ${opts.bars.reduce((s, b) => s + (b.segments.find((x) => x.key === k)?.value ?? 0), 0)}`);
    const peak = opts.bars.reduce((best, b) => (total(b) > total(best) ? b : best), opts.bars[0]!);
    parts.push(
      `${opts.bars.length} bars, ${opts.bars[0]!.label} to ${opts.bars[opts.bars.length - 1]!.label} (${opts.unit}).`,
      `In all: ${byKey.join(', ')}.`,
      total(peak) > 0 ? `Highest: ${total(peak)} at ${peak.label}.` : 'Every bar is 0.',
    );
  }
  if (opts.table) parts.push(`The figures are in the table “${opts.table}”.`);
  return parts.join(' ');
}

/** The colour of a segment's key. */
const colourOf = (key: string) => OUTCOME_COLOURS[key] ?? '#0b57d0';

/** A percentage of the chart's width, for an SVG length. */
const pct = (v: number) => `${v.toFixed(2)}%`;

/**
 * A stacked bar chart as inline SVG (no client script): one bar per entry, a legend, a <title>
 * per segment for pointer users, and `role="img"` named by its title and described by a summary
 * in words (`chartSummary`); `table` names the table that holds the same figures.
 *
 * The SVG has no viewBox: its lengths across are percentages of its width and its text is in CSS
 * pixels, so the text keeps its size however narrow the screen (with a 720-wide viewBox, 12-unit
 * text shrank to 5.7 px on a 375-px phone). Many bars (a time series) stand up, with a label
 * under every few, at most six; a few (one per topic) lie across, each under its own label, so
 * a long name has the width of the chart. The legend is HTML beside it, where it wraps.
 */
export function barChart(opts: {
  id: string;
  title: string;
  bars: readonly Bar[];
  keys: readonly string[];
  unit: string;
  table?: string;
}): Html {
  const total = (b: Bar) => b.segments.reduce((s, x) => s + x.value, 0);
  const max = Math.max(1, ...opts.bars.map(total));
  const segments = (b: Bar, place: (from: number, share: number) => { x: string; y: number; width: string; height: number }) => {
    let from = 0;
    return b.segments
      .filter((s) => s.value > 0)
      .map((s) => {
        const share = s.value / max;
        const r = place(from, share);
        from += share;
        return html`<rect x="${r.x}" y="${r.y.toFixed(1)}" width="${r.width}" height="${r.height.toFixed(1)}" fill="${colourOf(s.key)}"
          ><title>${b.label}: ${s.value} ${s.key}</title></rect
        >`;
      });
  };
  let height: number;
  let marks: readonly Html[];
  if (opts.bars.length <= 12) {
    // Across: a row of 34 px per bar, its label and figure above it.
    const row = 34;
    height = opts.bars.length * row + 4;
    marks = opts.bars.map((b, i) => {
      const top = i * row;
      return html`<text x="0" y="${top + 13}">${b.label}: ${total(b)}</text>
        <line x1="0" y1="${top + 18}" x2="0" y2="${top + 32}" stroke="#6b6b6b"></line>
        ${segments(b, (from, share) => ({ x: pct(from * 100), y: top + 18, width: pct(share * 100), height: 14 }))}`;
    });
  } else {
    // Standing: the highest figure above the plot, six labels at most under it.
    const top = 20;
    const base = 150;
    height = base + 20;
    const step = 100 / opts.bars.length;
    const every = Math.ceil(opts.bars.length / 6);
    const ticks = opts.bars.flatMap((b, i) => {
      if (i % every !== 0) return [];
      // The first label starts at its bar's edge: centred, it would leave the chart on the left.
      const [x, anchor] = i === 0 ? [pct(i * step), 'start'] : [pct((i + 0.5) * step), 'middle'];
      return [html`<text x="${x}" y="${height - 4}" text-anchor="${anchor}">${b.label}</text>`];
    });
    marks = [
      html`<text x="0" y="12">${max}</text>
        <line x1="0" y1="${top}" x2="100%" y2="${top}" stroke="#c4c4c4" stroke-dasharray="4 4"></line>
        <line x1="0" y1="${base}" x2="100%" y2="${base}" stroke="#6b6b6b"></line>`,
      ...opts.bars.flatMap((b, i) =>
        segments(b, (from, share) => ({
          x: pct((i + 0.1) * step),
          y: base - (from + share) * (base - top),
          width: pct(step * 0.8),
          height: share * (base - top),
        })),
      ),
      ...ticks,
    ];
  }
  const legend =
    opts.keys.length > 1
      ? html`<ul class="legend">
          ${opts.keys.map((k) => html`<li><span class="swatch" style="background:${colourOf(k)}"></span>${k}</li>`)}
        </ul>`
      : '';
  return html`<figure>
    ${legend}
    <svg
      role="img"
      aria-labelledby="${opts.id}-title"
      aria-describedby="${opts.id}-desc"
      width="100%"
      height="${height}"
      style="max-width:720px;display:block"
    >
      <title id="${opts.id}-title">${opts.title}</title>
      <desc id="${opts.id}-desc">${chartSummary(opts)}</desc>
      ${marks}
    </svg>
    <figcaption>${opts.title} (${opts.unit})</figcaption>
  </figure>`;
}
