import { describe, expect, it } from 'vitest';
import { OUTCOME_COLOURS } from './pipeline.js';
import { TEXT_COLOUR_PAIRS } from './layout.js';

// WCAG 2.x relative luminance and contrast ratio.
function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
}
const contrast = (a: string, b: string) => {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
};

describe('console colours', () => {
  it.each(TEXT_COLOUR_PAIRS)('text %s on %s passes WCAG AA (4.5:1)', (fg, bg) => {
    expect(contrast(fg, bg)).toBeGreaterThanOrEqual(4.5);
  });
  it.each(Object.entries(OUTCOME_COLOURS))('chart colour %s (%s) passes 3:1 against white', (_name, colour) => {
    expect(contrast(colour, '#ffffff')).toBeGreaterThanOrEqual(3);
  });
});
