import { describe, expect, it } from 'vitest';
import { TemplateSyntaxError, checkTemplate, escapeHtml, parseTemplate, renderTemplate, templateVariables } from './template.js';

describe('renderTemplate', () => {
  it('substitutes variables and dotted paths; numbers and booleans as text', () => {
    const r = renderTemplate(
      'Hi {{ name }}, order {{order.id}} ({{order.items.0}}) paid={{paid}} total={{total}}{{! a comment }}',
      {
        name: 'Ada',
        order: { id: 42, items: ['book'] },
        paid: true,
        total: 9.5,
      },
      'text',
    );
    expect(r).toEqual({ ok: true, text: 'Hi Ada, order 42 (book) paid=true total=9.5' });
  });

  it('escapes every value in HTML mode and nothing in text mode', () => {
    const data = { name: '<script>alert("x")</script> & \'Co\'' };
    expect(renderTemplate('<p>{{name}}</p>', data, 'html')).toEqual({
      ok: true,
      text: '<p>&lt;script&gt;alert(&quot;x&quot;)&lt;&#x2F;script&gt; &amp; &#39;Co&#39;</p>',
    });
    expect(renderTemplate('{{name}}', data, 'text')).toEqual({ ok: true, text: data.name });
    expect(escapeHtml('a=`b`')).toBe('a&#x3D;&#x60;b&#x60;');
  });

  it('reports every missing or null variable by name', () => {
    const r = renderTemplate('{{a}} {{b.c}} {{a}} {{d}}', { b: {}, d: null }, 'text');
    expect(r).toEqual({ ok: false, error: 'missing variables "a", "b.c", "d"' });
    expect(renderTemplate('{{x}}', null, 'text')).toEqual({ ok: false, error: 'missing variable "x"' });
  });

  it('refuses objects and arrays as values', () => {
    expect(renderTemplate('{{user}}', { user: { name: 'x' } }, 'text')).toMatchObject({
      ok: false,
      error: expect.stringMatching(/"user" not a string/),
    });
    expect(renderTemplate('{{n}}', { n: Number.NaN }, 'text').ok).toBe(false);
  });

  it('never reaches prototypes or runs code', () => {
    expect(renderTemplate('{{constructor}}', {}, 'text')).toEqual({ ok: false, error: 'missing variable "constructor"' });
    expect(renderTemplate('{{__proto__}}', {}, 'text').ok).toBe(false);
    expect(renderTemplate('{{name.length}}', { name: 'abc' }, 'text')).toEqual({ ok: false, error: 'missing variable "name.length"' });
    expect(renderTemplate('{{ process.exit }}', {}, 'text').ok).toBe(false);
  });

  it('turns syntax errors into errors, never throws', () => {
    expect(renderTemplate('Hi {{name', { name: 'x' }, 'text')).toEqual({ ok: false, error: 'unclosed "{{" at offset 3' });
  });

  it('refuses to render more than MAX_RENDERED_LENGTH characters: a repeated variable cannot amplify 128 KiB into gigabytes', () => {
    const MAX_RENDERED_LENGTH = 1_048_576; // template.ts's bound
    // The largest template the API stores (65,536 characters) and 60 KB of data: 13,107 × 60,000
    // characters = 786 MB of text, one notification or one preview request.
    const source = '{{a}}'.repeat(13_107);
    const data = { a: 'x'.repeat(60_000) };
    const error = `the rendered text is longer than ${MAX_RENDERED_LENGTH} characters`;
    expect(renderTemplate(source, data, 'text')).toEqual({ ok: false, error });
    expect(renderTemplate(source, { a: '<'.repeat(60_000) }, 'html')).toEqual({ ok: false, error });
    // Up to the bound it renders, and the bound counts what is rendered (escaping included), not the template.
    expect(renderTemplate('{{a}}', { a: 'x'.repeat(MAX_RENDERED_LENGTH) }, 'text')).toMatchObject({ ok: true });
    expect(renderTemplate('{{a}}!', { a: 'x'.repeat(MAX_RENDERED_LENGTH) }, 'text')).toEqual({ ok: false, error });
    expect(renderTemplate('{{a}}', { a: '<'.repeat(10) }, 'html', 40)).toEqual({ ok: true, text: '&lt;'.repeat(10) });
    expect(renderTemplate('{{a}}', { a: '<'.repeat(11) }, 'html', 40)).toEqual({
      ok: false,
      error: 'the rendered text is longer than 40 characters',
    });
  });
});

describe('parseTemplate', () => {
  it.each([
    '{{#items}}x{{/items}}',
    '{{^x}}',
    '{{> partial}}',
    '{{{raw}}}',
    '{{& raw}}',
    '{{a b}}',
    '{{}}',
    '{{a..b}}',
    '{{ f() }}',
    '{{=<% %>=}}',
  ])('refuses %s', (source) => {
    expect(() => parseTemplate(source)).toThrow(TemplateSyntaxError);
  });
  it('lists the variables once each', () => {
    expect(templateVariables('{{a}}{{b.c}}{{a}}{{! x }}')).toEqual(['a', 'b.c']);
  });
  it('leaves single braces and stray closers alone', () => {
    expect(renderTemplate('{a} }} {x}', {}, 'text')).toEqual({ ok: true, text: '{a} }} {x}' });
  });
});

describe('checkTemplate', () => {
  it('gives the position of a syntax error', () => {
    expect(checkTemplate('Hi\nthere {{#admin}}')).toEqual({ message: expect.stringContaining('offset 9'), offset: 9, line: 2, column: 7 });
  });
  it('refuses a variable the sample data does not have, at its position', () => {
    expect(checkTemplate('Hi {{name}}, {{code}}', { name: 'Ada' })).toEqual({
      message: 'unknown variable "code" at offset 13',
      offset: 13,
      line: 1,
      column: 14,
    });
    expect(checkTemplate('{{user}}', { user: { a: 1 } })?.message).toMatch(/not a string/);
  });
  it('passes a good template, with or without sample data', () => {
    expect(checkTemplate('Hi {{name}}')).toBeNull();
    expect(checkTemplate('Hi {{name}}', { name: 'Ada' })).toBeNull();
  });
});
