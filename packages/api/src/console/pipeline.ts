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

/**
 * A stacked bar chart as inline SVG (no client script): one bar per entry, a legend, a <title>
 * per segment for pointer users, and `role="img"` named by its title and described by a summary
 * in words (`chartSummary`); `table` names the table that holds the same figures.
 */
export function barChart(opts: {
  id: string;
  title: string;
  bars: readonly Bar[];
  keys: readonly string[];
  unit: string;
  table?: string;
}): Html {
  const width = 720;
  const height = 180;
  const left = 40;
  const bottom = 20;
  const max = Math.max(1, ...opts.bars.map((b) => b.segments.reduce((s, x) => s + x.value, 0)));
  const step = (width - left) / Math.max(1, opts.bars.length);
  const scale = (v: number) => (v / max) * (height - bottom - 10);
  const rects = opts.bars.flatMap((b, i) => {
    let y = height - bottom;
    return b.segments
      .filter((s) => s.value > 0)
      .map((s) => {
        const h = scale(s.value);
        y -= h;
        return html`<rect
          x="${(left + i * step + 1).toFixed(1)}"
          y="${y.toFixed(1)}"
          width="${Math.max(1, step - 2).toFixed(1)}"
          height="${h.toFixed(1)}"
          fill="${OUTCOME_COLOURS[s.key] ?? '#0b57d0'}"
          ><title>${b.label}: ${s.value} ${s.key}</title></rect
        >`;
      });
  });
  const ticks = opts.bars
    .map((b, i) => ({ b, i }))
    .filter(({ i }) => opts.bars.length <= 12 || i % 10 === 0)
    // Centred under its own bar: started at the bar's left edge, a long label ran on under the next ones.
    .map(({ b, i }) => html`<text x="${(left + (i + 0.5) * step).toFixed(1)}" y="${height - 5}" text-anchor="middle">${b.label}</text>`);
  const legend = opts.keys.map(
    (k, i) =>
      html`<rect x="${left + i * 110}" y="0" width="10" height="10" fill="${OUTCOME_COLOURS[k] ?? '#0b57d0'}"></rect
        ><text x="${left + i * 110 + 14}" y="10">${k}</text>`,
  );
  return html`<figure>
    <svg
      role="img"
      aria-labelledby="${opts.id}-title"
      aria-describedby="${opts.id}-desc"
      viewBox="0 0 ${width} ${height}"
      width="100%"
      style="max-width:${width}px"
    >
      <title id="${opts.id}-title">${opts.title}</title>
      <desc id="${opts.id}-desc">${chartSummary(opts)}</desc>
      <text x="0" y="${height - bottom}">0</text>
      <text x="0" y="20">${max}</text>
      <line x1="${left}" y1="${height - bottom}" x2="${width}" y2="${height - bottom}" stroke="#6b6b6b"></line>
      ${legend}${rects}${ticks}
    </svg>
    <figcaption>${opts.title} (${opts.unit})</figcaption>
  </figure>`;
}
