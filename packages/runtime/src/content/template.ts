/**
 * The template language: deliberately tiny and logic-less, so a template can never run code.
 *
 * - `{{ name }}`, `{{ user.first_name }}`, `{{ items.0 }}`: a variable, looked up in the
 *   notification's `data` by own properties only (`{{constructor}}` or `{{__proto__}}` find nothing).
 * - `{{! anything }}`: a comment, renders as nothing.
 * - Nothing else: sections, partials, raw (`{{{ }}}`, `{{& }}`) and any other `{{…}}` are
 *   syntax errors, reported when the template is stored and again at send time.
 *
 * A variable must resolve to a string, a finite number or a boolean. Missing or null variables
 * and objects are errors that list every offending variable; rendering never guesses.
 * In HTML mode every value is HTML-escaped; text mode inserts values as they are.
 * A rendered text longer than `MAX_RENDERED_LENGTH` is an error too: a template may use one
 * variable thousands of times, so without a bound 64 KiB of template and 64 KiB of data would
 * render to gigabytes.
 */

/** A parsed template piece. */
export type TemplatePart =
  | { readonly kind: 'text'; readonly text: string }
  | {
      readonly kind: 'variable';
      readonly name: string;
      readonly path: readonly string[];
      /** Where its `{{` starts. */ readonly offset: number;
    };

/** A template that does not parse. `code` is stable; the message names the offset and the tag. */
export class TemplateSyntaxError extends Error {
  readonly code = 'template_invalid';
  readonly offset: number;
  constructor(message: string, offset: number) {
    super(message);
    this.name = 'TemplateSyntaxError';
    this.offset = offset;
  }
}

const SEGMENT = '[A-Za-z_][A-Za-z0-9_-]*|\\d+';
const NAME = new RegExp(`^(?:${SEGMENT})(?:\\.(?:${SEGMENT}))*$`);

/** Splits a template into text and variables. Throws `TemplateSyntaxError`. */
export function parseTemplate(source: string): TemplatePart[] {
  const parts: TemplatePart[] = [];
  let i = 0;
  while (i < source.length) {
    const open = source.indexOf('{{', i);
    if (open < 0) {
      parts.push({ kind: 'text', text: source.slice(i) });
      break;
    }
    if (open > i) parts.push({ kind: 'text', text: source.slice(i, open) });
    if (source.startsWith('{{{', open)) {
      throw new TemplateSyntaxError(`unsupported tag "{{{" at offset ${open}: unescaped output is not available; use {{name}}`, open);
    }
    const close = source.indexOf('}}', open + 2);
    if (close < 0) throw new TemplateSyntaxError(`unclosed "{{" at offset ${open}`, open);
    const inner = source.slice(open + 2, close);
    if (inner.startsWith('!')) {
      i = close + 2;
      continue;
    }
    const name = inner.trim();
    if (!NAME.test(name)) {
      const shown = inner.length > 40 ? `${inner.slice(0, 40)}…` : inner;
      throw new TemplateSyntaxError(
        `unsupported tag "{{${shown}}}" at offset ${open}: only {{variable}}, {{a.b}} and {{! comment}} are allowed`,
        open,
      );
    }
    parts.push({ kind: 'variable', name, path: name.split('.'), offset: open });
    i = close + 2;
  }
  return parts;
}

/** Every variable a template references, once each, in order of first use. Throws `TemplateSyntaxError`. */
export function templateVariables(source: string): string[] {
  const names = parseTemplate(source).flatMap((p) => (p.kind === 'variable' ? [p.name] : []));
  return [...new Set(names)];
}

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '/': '&#x2F;',
  '`': '&#x60;',
  '=': '&#x3D;',
};

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`=/]/g, (c) => HTML_ESCAPES[c]!);
}

/** How values are inserted. */
export type RenderMode = 'text' | 'html';

/**
 * The longest text a template may render to, in UTF-16 code units (1 Mi): 16 times the largest
 * template and far above any real message, but a bound on what one notification or one preview
 * can make the process build (a template repeating `{{a}}` 13,000 times with a 60 KB `a` renders
 * to 780 MB otherwise).
 */
const MAX_RENDERED_LENGTH = 1_048_576;

/** The outcome of rendering: the text, or every problem found. */
export type RenderResult = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly error: string };

function lookup(data: unknown, path: readonly string[]): unknown {
  let current: unknown = data;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    if (!Object.prototype.hasOwnProperty.call(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/**
 * Renders `source` with `data`. Never throws for bad input: a syntax error, missing/null
 * variables or non-scalar values come back as `{ ok: false, error }`, naming every variable.
 */
export function renderTemplate(
  source: string,
  data: Record<string, unknown> | null,
  mode: RenderMode,
  maxLength: number = MAX_RENDERED_LENGTH,
): RenderResult {
  let parts: TemplatePart[];
  try {
    parts = parseTemplate(source);
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
  const missing: string[] = [];
  const notScalar: string[] = [];
  let out = '';
  const tooLong = (): RenderResult => ({ ok: false, error: `the rendered text is longer than ${maxLength} characters` });
  for (const part of parts) {
    if (part.kind === 'text') {
      out += part.text;
      if (out.length > maxLength) return tooLong();
      continue;
    }
    const value = lookup(data ?? {}, part.path);
    let text: string;
    if (value === undefined || value === null) {
      if (!missing.includes(part.name)) missing.push(part.name);
      continue;
    } else if (typeof value === 'string') {
      text = value;
    } else if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') {
      text = String(value);
    } else {
      if (!notScalar.includes(part.name)) notScalar.push(part.name);
      continue;
    }
    out += mode === 'html' ? escapeHtml(text) : text;
    // Checked as it grows, so a runaway render stops at the bound instead of building the whole text.
    if (out.length > maxLength) return tooLong();
  }
  const problems: string[] = [];
  if (missing.length > 0) problems.push(`missing variable${missing.length > 1 ? 's' : ''} ${missing.map((n) => `"${n}"`).join(', ')}`);
  if (notScalar.length > 0) {
    problems.push(
      `variable${notScalar.length > 1 ? 's' : ''} ${notScalar.map((n) => `"${n}"`).join(', ')} not a string, number or boolean`,
    );
  }
  return problems.length > 0 ? { ok: false, error: problems.join('; ') } : { ok: true, text: out };
}

/** The first problem of a template, with its position (0-based offset, 1-based line and column). */
export interface TemplateProblem {
  readonly message: string;
  readonly offset: number;
  readonly line: number;
  readonly column: number;
}

function position(source: string, offset: number): { line: number; column: number } {
  const before = source.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n') };
}

/**
 * Checks a template before it is stored: its syntax, and, when `sampleData` is given, that every
 * variable it uses resolves in that data to a string, number or boolean (an unknown variable is
 * refused at create time instead of failing every send). Returns the first problem or null.
 */
export function checkTemplate(source: string, sampleData?: Record<string, unknown> | null): TemplateProblem | null {
  let parts: TemplatePart[];
  try {
    parts = parseTemplate(source);
  } catch (err) {
    const offset = err instanceof TemplateSyntaxError ? err.offset : 0;
    return { message: (err as Error).message, offset, ...position(source, offset) };
  }
  if (sampleData === undefined) return null;
  for (const part of parts) {
    if (part.kind !== 'variable') continue;
    const value = lookup(sampleData ?? {}, part.path);
    const scalar = typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
    if (!scalar) {
      const why = value === undefined || value === null ? 'unknown variable' : 'variable is not a string, number or boolean:';
      return { message: `${why} "${part.name}" at offset ${part.offset}`, offset: part.offset, ...position(source, part.offset) };
    }
  }
  return null;
}
