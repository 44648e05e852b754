/**
 * fast-check generators of notification intents for the SQL enqueue tests: mostly valid intents,
 * and near-misses of every rule (wrong JSON types; lengths one under, at and one over each bound,
 * in characters of every UTF-8 width, since the former validator counted some fields in code
 * points and others in UTF-16 units; malformed recipients; expiries just before or after `NOW`;
 * content just over 64 KiB; nesting just past 32 levels; unknown fields). Strings are storable by
 * PostgreSQL (no U+0000, no lone surrogates) and webhook hosts are ASCII: see reference-intent.ts.
 */
import fc from 'fast-check';

/** The clock of every generated intent: expiries are generated around it. */
export const NOW = new Date('2026-05-01T12:00:00.000Z');

// eslint-disable-next-line no-control-regex -- U+0000 is exactly what PostgreSQL cannot store
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when PostgreSQL's jsonb can hold every string in `value`. */
function storable(value: unknown): boolean {
  // JSON.stringify writes U+0000 as \u0000 and an unpaired surrogate as \udXXX, and nothing else so.
  return !/(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f])/.test(JSON.stringify(value) ?? '');
}

// One character of each UTF-8 width; the astral one counts 2 UTF-16 units.
const WIDE = ['a', 'é', '€', '😀'] as const;

/** A string of exactly `units` UTF-16 code units, made of `char` (padded with 'a' when it does not divide). */
function ofUnits(units: number, char: string): string {
  const n = Math.floor(units / char.length);
  return char.repeat(n) + 'a'.repeat(units - n * char.length);
}

/** Strings of lengths around each bound (one under, at, one over), in every character width. */
function around(...bounds: number[]): fc.Arbitrary<string> {
  const lengths = bounds.flatMap((b) => [b - 1, b, b + 1]).filter((n) => n >= 0);
  return fc.tuple(fc.constantFrom(...lengths), fc.constantFrom(...WIDE)).map(([n, c]) => ofUnits(n, c));
}

/** Any storable text. */
const text = (minLength: number, maxLength: number) =>
  fc.oneof(fc.string({ minLength, maxLength }), fc.string({ unit: 'grapheme', minLength, maxLength })).filter((s) => !UNSTORABLE.test(s));

/** A JSON value of another type than expected. */
const wrongType: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
  fc.constant([]),
  fc.array(fc.string({ maxLength: 3 }), { minLength: 1, maxLength: 3 }),
  fc.constant({}),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 2 }),
);

/** Arrays where a string is expected, long enough to trip zod's length checks on arrays. */
const arrayInsteadOf = (...lengths: number[]) => fc.constantFrom(...lengths).map((n) => Array.from({ length: n }, () => 0));

/** The values of one field: good ones, and near-misses. */
interface Field {
  readonly good: fc.Arbitrary<unknown>;
  readonly bad: fc.Arbitrary<unknown>;
}

function field(good: fc.Arbitrary<unknown>, ...bad: fc.Arbitrary<unknown>[]): Field {
  return { good, bad: fc.oneof(...bad) };
}

const email = field(
  fc.oneof(fc.emailAddress(), fc.constantFrom('ada@example.com', 'a.b+c@sub.example.org', 'é@exämple.com', '😀@x.io')),
  fc.constantFrom(
    'a@b',
    'a b@c.de',
    'a@b.',
    '@b.co',
    'a@@b.co',
    'a@b.co\u00a0',
    'a\u2028b@c.de',
    'a\u200bb@c.de',
    'a"b@c.de',
    'a@b,c.de',
    '(a)@b.co',
    'a@[b].co',
  ),
  fc.constantFrom(253, 254, 255).map((n) => `${'a'.repeat(n - 7)}@ex.com`),
  fc.constantFrom(252, 254, 256).map((n) => `${ofUnits(n - 7, '😀')}@ex.com`),
);

const sms = field(
  fc.stringMatching(/^\+[1-9]\d{6,14}$/),
  fc.constantFrom(
    '+0123456789',
    '+123456',
    '+1234567',
    '+123456789012345',
    '+1234567890123456',
    '14155550100',
    '+1 4155550100',
    '+١٢٣٤٥٦٧٨',
    '+1415555010a',
    '+14155550100\n',
  ),
);

const urlHost = fc.oneof(
  { weight: 3, arbitrary: fc.domain() },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'example.com',
      'EXAMPLE.com',
      'localhost',
      'a..b',
      '.',
      'a.',
      '127.0.0.1',
      '0x7f.1',
      '0X7F.0.0.1',
      '1.2.3.4.5',
      '999.1.1.1',
      '1.256',
      '1.2.65536',
      '4294967295',
      '4294967296',
      '0x100000000',
      'example.123',
      'example.0x1g',
      '08',
      '09.1',
      '0x',
      '010.1',
      '[::1]',
      '[::ffff:1.2.3.4]',
      '[1:2:3:4:5:6:7:8]',
      '[1::2::3]',
      '[::1',
      '[:1]',
      '[1:2:3:4:5:6:7:8:9]',
      '[::01.2.3.4]',
      '[1:2:3:4:5:6:1.2.3.4]',
      '[1:2:3:4:5:6:7:1.2.3.4]',
      '[::]',
      '[]',
      '[fe80::1%25eth0]',
      'a[b]c',
      'a b',
      'a%20b',
      '%41.com',
      'a%zz.com',
      'a%2fb',
      'a%25b',
      'a%3Ab',
      'a#b',
      '',
      'a<b',
      'a^b',
      'a|b',
      'a_b.com',
      'a*b',
      'a%00b',
      'a%7Fb',
      'a%7fb.com',
    ),
  },
);

const webhook = field(
  fc.constantFrom('https://hooks.example.com/in', 'http://example.org/x?y=1', 'https://127.0.0.1:8443/h', 'http://127.0.0.1:40247/7'),
  fc
    .record({
      lead: fc.constantFrom('', '', '', ' ', '\t', '\u0001'),
      scheme: fc.constantFrom(
        'https',
        'https',
        'http',
        'HTTPS',
        'Http',
        'ftp',
        'ws',
        'wss',
        'file',
        'mailto',
        'javascript',
        'foo+bar',
        '1http',
        'ht tp',
        '',
      ),
      colon: fc.constantFrom(':', ':', ':', ''),
      slashes: fc.constantFrom('//', '//', '//', '/', '', '///', '\\\\', '/\\'),
      userinfo: fc.constantFrom('', '', '', '', 'user@', 'user:pw@', ':@', ':pw@', 'u:@', '@', '@@', 'a@b@', 'us%20er@', '::@'),
      host: urlHost,
      port: fc.constantFrom(
        '',
        '',
        '',
        ':80',
        ':',
        ':65535',
        ':65536',
        ':0080',
        ':x',
        ':99999999',
        ':8080',
        ':00000000065535',
        ':10000',
        ':40247',
        ':65529',
        ':65540',
        ':70000',
        ':09999',
      ),
      path: fc.constantFrom('', '/', '/hook', '/a b', '?q=1', '#frag', '/\\x', '/in/orders?x=1&y=%20', '/é'),
      trail: fc.constantFrom('', '', ' ', '\n'),
    })
    .map((p) => p.lead + p.scheme + p.colon + p.slashes + p.userinfo + p.host + p.port + p.path + p.trail),
  fc.string({ maxLength: 30 }),
);

/** Webhook URLs: valid ones and near-misses of every rule of the URL check. */
export const webhookUrlArbitrary: fc.Arbitrary<unknown> = fc.oneof(webhook.good, webhook.bad);

const recipients: Record<string, Field> = { email, sms, webhook };

/** The recipients of `channel`, near-misses including another channel's good ones and wrong types. */
function recipient(channel: string): Field {
  const own = recipients[channel] ?? email;
  return field(
    own.good,
    own.bad,
    own.bad,
    email.good,
    webhook.good,
    fc.constantFrom('', 'x'),
    wrongType,
    arrayInsteadOf(0, 2, 2049),
    around(2048),
  );
}

/** An ISO 8601 instant with an offset (in the format zod accepts), `ms` after NOW. */
function isoAt(ms: number, offsetMinutes: number, fractionDigits: number): string {
  const local = new Date(NOW.getTime() + ms + offsetMinutes * 60_000);
  const base = local.toISOString().slice(0, 19);
  const fraction =
    fractionDigits === 0
      ? ''
      : `.${String(local.getUTCMilliseconds()).padStart(3, '0')}${'7'.repeat(Math.max(0, fractionDigits - 3))}`.slice(
          0,
          fractionDigits + 1,
        );
  if (offsetMinutes === 0) return `${base}${fraction}Z`;
  const sign = offsetMinutes > 0 ? '+' : '-';
  const a = Math.abs(offsetMinutes);
  return `${base}${fraction}${sign}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
}

const instant = (msRange: fc.Arbitrary<number>) =>
  fc
    .tuple(msRange, fc.oneof(fc.constant(0), fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 })), fc.integer({ min: 0, max: 9 }))
    .map(([ms, offset, digits]) => isoAt(ms, offset, digits));

const expiresAt = field(
  instant(fc.integer({ min: 1_000, max: 40 * 86_400_000 })),
  instant(fc.oneof(fc.integer({ min: -5_000, max: 5_000 }), fc.integer({ min: -40 * 86_400_000, max: 0 }))),
  fc.constantFrom(
    '0000-01-01T00:00:00Z',
    '0000-02-29T00:00:00+23:59',
    '9999-12-31T23:59:59.999-23:59',
    '2028-02-29T00:00:00Z',
    '2027-02-29T00:00:00Z',
    '2100-02-29T00:00:00Z',
    '2000-02-29T12:00:00Z',
    '2030-13-01T00:00:00Z',
    '2030-04-31T00:00:00Z',
    '2030-01-01T24:00:00Z',
    '2030-01-01T00:00Z',
    '2030-01-01t00:00:00z',
    '2030-01-01 00:00:00Z',
    '2030-01-01T00:00:00',
    '2030-01-01T00:00:00+24:00',
    '2030-01-01T00:00:00+0100',
    '2030-01-01T00:00:00.Z',
    '2030-01-01',
    '20300101T000000Z',
    '+002030-01-01T00:00:00Z',
    '2026-05-01T12:00:00.000Z',
    '2026-05-01T12:00:00.0009Z',
    '2026-05-01T12:00:00.001Z',
    '2026-05-01T13:00:00.000+01:00',
    '2026-05-01T13:00:00.001+01:00',
    '２０３０-01-01T00:00:00Z',
  ),
  wrongType,
);

/** An object nested `depth` levels deep along one branch (arrays and objects in turn as `arrays` says). */
const nested = (depth: number, arrays: boolean[]): unknown => {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = arrays[i % arrays.length] ? [v] : { d: v };
  return v;
};

const data = field(
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }),
  fc
    .tuple(fc.integer({ min: 29, max: 34 }), fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }), fc.constantFrom('x', 'aa', 'b'))
    .map(([depth, arrays, key]) => ({ [key]: nested(depth, arrays), z: 1 })),
  fc
    .tuple(fc.integer({ min: 31, max: 33 }), fc.integer({ min: 31, max: 33 }))
    .map(([a, b]) => ({ bb: nested(a, [true]), a: nested(b, [false]) })),
  fc.integer({ min: 60_000, max: 66_000 }).map((n) => ({ big: 'd'.repeat(n), n: [1.5e-7, 1e21, -0, 123.456] })),
  wrongType.filter((v) => typeof v !== 'object' || v === null || Array.isArray(v)),
);

const metadata = field(
  fc.dictionary(fc.string({ maxLength: 10 }), fc.string({ maxLength: 20 }), { maxKeys: 4 }),
  fc.tuple(around(100), fc.constantFrom('v', ofUnits(1000, '😀'))).map(([k, v]) => ({ [k]: v, a: 'b' })),
  fc.tuple(fc.constantFrom('k', 'key'), around(1000)).map(([k, v]) => ({ [k]: v })),
  fc.tuple(fc.constantFrom('k', 'zz'), wrongType).map(([k, v]) => ({ [k]: v, a: 'ok' })),
  fc.constantFrom({ a: Array.from({ length: 1001 }, () => 0) }, { length: 'x' }),
  wrongType.filter((v) => typeof v !== 'object' || v === null || Array.isArray(v)),
);

const integerField = (max: number) =>
  field(
    fc.integer({ min: 1, max: Math.min(max, 1_000_000) }),
    fc.constantFrom(
      0,
      -1,
      1.5,
      -0.5,
      max,
      max + 1,
      2147483647,
      2147483648,
      2 ** 53 - 1,
      2 ** 53,
      2 ** 53 + 2,
      -(2 ** 60),
      1e20,
      1e308,
      -1e308,
      5.0,
    ),
    fc.constantFrom('5', true, null, [5], {}),
  );

/** The other fields of an intent (channel and recipient are drawn together). */
const FIELDS: Record<string, Field> = {
  tenant_id: field(fc.constantFrom('acme', 'globex', 't1'), around(200), fc.constant(''), wrongType),
  idempotency_key: field(
    fc.uuid().map((u) => `k-${u}`),
    around(255),
    fc.constant(''),
    wrongType,
  ),
  subject: field(text(0, 40), around(998), wrongType, arrayInsteadOf(0, 998, 999)),
  body: field(
    text(1, 80),
    fc.constant(''),
    fc.integer({ min: 65_536 - 300, max: 65_536 + 20 }).map((n) => 'x'.repeat(n)),
    wrongType,
    arrayInsteadOf(0),
  ),
  template: field(fc.constantFrom('welcome', 'order-shipped'), around(200), fc.constant(''), wrongType, arrayInsteadOf(0, 201)),
  template_version: integerField(2147483647),
  data,
  category: field(fc.constantFrom('orders', 'security'), around(100), fc.constant(''), wrongType, arrayInsteadOf(0, 101)),
  expires_at: expiresAt,
  ttl_seconds: integerField(2_592_000),
  metadata,
  traceparent: field(fc.constant('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'), fc.constant('junk'), wrongType),
};

/** A change that breaks (or may break) one rule. */
type Mutation = (intent: Record<string, unknown>) => void;

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  // one field gets a near-miss value
  fc.constantFrom(...Object.keys(FIELDS)).chain((name) =>
    FIELDS[name]!.bad.map(
      (value): Mutation =>
        (intent) =>
          void (intent[name] = value),
    ),
  ),
  // a required field goes missing, or an unknown one appears
  fc.constantFrom('tenant_id', 'channel', 'to', 'body').map(
    (name): Mutation =>
      (intent) =>
        void delete intent[name],
  ),
  fc
    .dictionary(fc.constantFrom('recipient', 'extra', 'Channel', 'a"b', 'ttl', 'zed', 'tenant'), fc.integer(), { minKeys: 1, maxKeys: 2 })
    .map(
      (extra): Mutation =>
        (intent) =>
          void Object.assign(intent, extra),
    ),
  // body and template both, or neither; a template version without a template
  fc.constant<Mutation>((intent) => void (intent.template = 'welcome')),
  fc.constant<Mutation>((intent) => void delete intent.body),
  fc.constant<Mutation>((intent) => void (intent.template_version = 2)),
  // a subject on a channel that has none; both expiries
  fc.constant<Mutation>((intent) => void (intent.subject = 'Hi')),
  fc.constant<Mutation>((intent) => {
    intent.expires_at = isoAt(3_600_000, 0, 3);
    intent.ttl_seconds = 60;
  }),
  // content just under or over 64 KiB
  fc.integer({ min: 65_536 - 400, max: 65_536 + 20 }).map((n): Mutation => (intent) => {
    if (typeof intent.body === 'string') intent.body = 'x'.repeat(n);
    else intent.data = { big: 'd'.repeat(n - 12) };
  }),
  // an unknown channel
  fc.oneof(fc.constantFrom('pager', 'Email', ' email', 'e-mail', ''), wrongType).map(
    (c): Mutation =>
      (intent) =>
        void (intent.channel = c),
  ),
);

/**
 * A whole intent: a valid one (optional fields drawn at random), then up to three mutations, each
 * a near-miss of one rule. About a third stay valid, and most refusals are about one thing.
 */
export const intentArbitrary: fc.Arbitrary<Record<string, unknown>> = fc
  .constantFrom('email', 'sms', 'webhook')
  .chain((channel) =>
    fc.record({
      channel: fc.constant(channel),
      to: recipient(channel).good,
      tenant_id: FIELDS.tenant_id!.good,
      optional: fc.record(
        {
          idempotency_key: FIELDS.idempotency_key!.good,
          traceparent: FIELDS.traceparent!.good,
          category: FIELDS.category!.good,
          data: FIELDS.data!.good,
          metadata: FIELDS.metadata!.good,
          expiry: fc.oneof(
            FIELDS.expires_at!.good.map((expires_at) => ({ expires_at })),
            FIELDS.ttl_seconds!.good.map((ttl_seconds) => ({ ttl_seconds })),
          ),
        },
        { requiredKeys: [] },
      ),
      content: fc.oneof(
        FIELDS.body!.good.map((body) => ({ body })),
        fc.record({ template: FIELDS.template!.good, template_version: FIELDS.template_version!.good }, { requiredKeys: ['template'] }),
      ),
      subject: channel === 'email' ? fc.option(FIELDS.subject!.good, { nil: undefined }) : fc.constant(undefined),
      badRecipient: fc.oneof({ weight: 5, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: recipient(channel).bad }),
      mutations: fc.oneof(
        { weight: 5, arbitrary: fc.constant([]) },
        { weight: 4, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 1 }) },
        { weight: 1, arbitrary: fc.array(mutation, { minLength: 2, maxLength: 3 }) },
      ),
    }),
  )
  .map(({ optional: { expiry, ...optional }, content, subject, badRecipient, mutations, ...required }) => {
    const intent: Record<string, unknown> = {
      ...required,
      ...optional,
      ...expiry,
      ...content,
      ...(subject === undefined ? {} : { subject }),
    };
    if (badRecipient !== undefined) intent.to = badRecipient;
    for (const m of mutations) m(intent);
    return intent;
  })
  .filter(storable);

/** A typical valid intent of each channel, with optional fields drawn at random (for the write tests). */
export const validIntentArbitrary: fc.Arbitrary<Record<string, unknown>> = fc
  .record(
    {
      tenant_id: fc.constantFrom('acme', 'globex', 'tenant "quoted"\\ \u0001 ünïcödé 😀'),
      channel: fc.constantFrom('email', 'sms', 'webhook'),
      idempotency_key: fc.uuid().map((u) => `k-${u}`),
      traceparent: fc.constantFrom('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'junk'),
      body: text(1, 60),
      template: fc.constantFrom('welcome', 'order-shipped'),
      template_version: fc.integer({ min: 1, max: 2147483647 }),
      data: fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
      category: fc.constantFrom('orders', 'security'),
      ttl_seconds: fc.integer({ min: 1, max: 2_592_000 }),
      expires_in_ms: fc.integer({ min: 1, max: 30 * 86_400_000 }),
      metadata: fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 12 }), { maxKeys: 3 }),
      useTemplate: fc.boolean(),
      expiry: fc.constantFrom('none', 'ttl', 'at'),
    },
    { requiredKeys: ['tenant_id', 'channel', 'body', 'template', 'useTemplate', 'expiry', 'expires_in_ms', 'ttl_seconds'] },
  )
  .map(({ channel, body, template, template_version, useTemplate, expiry, expires_in_ms, ttl_seconds, ...rest }) => {
    const intent: Record<string, unknown> = { ...rest, channel };
    intent.to = channel === 'email' ? 'ada@example.com' : channel === 'sms' ? '+14155550100' : 'https://hooks.example.com/in';
    if (channel === 'email') intent.subject = 'Hi';
    if (useTemplate) {
      intent.template = template;
      if (template_version !== undefined) intent.template_version = template_version;
    } else intent.body = body;
    if (expiry === 'ttl') intent.ttl_seconds = ttl_seconds;
    if (expiry === 'at') intent.expires_at = new Date(Date.now() + 86_400_000 + expires_in_ms).toISOString();
    return intent;
  })
  .filter(storable);

/**
 * `data` enqueue()'s plain path takes, and data of the same shape it leaves to the function: keys
 * and strings jsonb orders or prints differently (quotes, controls, non-ASCII, integer-like
 * keys), numbers jsonb could spell otherwise, nesting on both sides of the plain path's depth.
 */
const plainData = fc.oneof(
  // mostly data the plain path takes (template variables), so that it stays the common path here
  { weight: 8, arbitrary: fc.integer().map((order) => ({ order })) },
  { weight: 2, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }) },
  fc.constantFrom<Record<string, unknown>>(
    { ключ: 'значение 😀', 'a"b\\': '\u0001\n\u2028', '10': 1, '9': [true, null, -0.5, 123456789012345680000], '': {} },
    { n: [0.1, -0, 1e21, 1.5e-7, 2 ** 53 + 2], s: 'x' },
    { __proto__: null, a: 1 },
    JSON.parse('{"__proto__": {"x": 1}, "a": 2}') as Record<string, unknown>,
    { toJSON: 'a string, not a method' },
  ),
  fc
    .tuple(fc.integer({ min: 14, max: 19 }), fc.array(fc.boolean(), { minLength: 1, maxLength: 3 }))
    .map(([depth, arrays]) => ({ deep: nested(depth, arrays), z: [] })),
);

// The data `fill` makes: its jsonb text is JSON.stringify's plus 10 (one space after each of its five `:` and five `,`).
const filler = (n: number) => ({ big: 'd'.repeat(n), list: [1, 2.5, -3], o: { k: 'v', z: null } });
const FILLER_JSONB_BYTES = JSON.stringify(filler(0)).length + 10;

/**
 * Intents of the fields enqueue()'s plain path takes (tenant_id, channel, to, body, subject,
 * traceparent, data), each good or a near-miss (another channel's recipient, lengths at the bounds
 * in every character width, wrong types, a subject on a channel without one, content just over
 * 64 KiB, counted with data's jsonb text to within a few bytes of the limit, data too deep or not
 * an object, a required field missing): the plain path must write the function's rows for each
 * intent it takes, and leave every other one to the function.
 */
export const plainIntentArbitrary: fc.Arbitrary<Record<string, unknown>> = plainIntents(true);

/** plainIntentArbitrary's good values only (no near-miss, nothing missing): intents most of which the plain path takes. */
export const goodPlainIntentArbitrary: fc.Arbitrary<Record<string, unknown>> = plainIntents(false);

function plainIntents(nearMisses: boolean): fc.Arbitrary<Record<string, unknown>> {
  // A good value, or with nearMisses now and then a bad one.
  const either = <T>(goodWeight: number, good: fc.Arbitrary<T>, bad: fc.Arbitrary<T>): fc.Arbitrary<T> =>
    nearMisses ? fc.oneof({ weight: goodWeight, arbitrary: good }, { weight: 1, arbitrary: bad }) : good;
  return fc
    .constantFrom('email', 'sms', 'webhook')
    .chain((channel) =>
      fc.record(
        {
          channel: either(19, fc.constant(channel), fc.constantFrom('pager', 'Email', '')),
          to: either(5, recipient(channel).good, recipient(channel).bad),
          tenant_id: either(5, fc.constantFrom('acme', 'tenant "quoted"\\ \u0001 ünïcödé 😀', 'a/b'), FIELDS.tenant_id!.bad),
          body: either(9, FIELDS.body!.good, FIELDS.body!.bad),
          // present but undefined: JSON leaves it out, and so must the plain path
          subject:
            channel === 'email'
              ? either(4, FIELDS.subject!.good, FIELDS.subject!.bad)
              : either(9, fc.constant(undefined), FIELDS.subject!.good),
          traceparent: fc.oneof(FIELDS.traceparent!.good, FIELDS.traceparent!.bad),
          // a third of the intents carry data (a key present but undefined otherwise, which JSON leaves out)
          data: fc.oneof(
            { weight: 2, arbitrary: fc.constant(undefined) },
            { weight: 1, arbitrary: either(20, plainData, FIELDS.data!.bad) },
          ),
          // content (subject, body and data's jsonb text) this many bytes over 64 KiB
          fill: either(25, fc.constant(undefined), fc.integer({ min: -3, max: 3 })),
          // now and then a required field goes missing
          missing: either(12, fc.constant(undefined), fc.constantFrom('tenant_id', 'channel', 'to', 'body')),
        },
        { requiredKeys: ['channel', 'to', 'tenant_id', 'body', 'data', 'fill', 'missing'] },
      ),
    )
    .map(({ fill, missing, ...intent }) => {
      const record = intent as Record<string, unknown>;
      if (fill !== undefined) {
        const size = (v: unknown) => (typeof v === 'string' ? Buffer.byteLength(v) : 0);
        record.data = filler(Math.max(0, 65_536 + fill - size(record.subject) - size(record.body) - FILLER_JSONB_BYTES));
      }
      if (missing !== undefined) delete record[missing];
      return intent;
    })
    .filter(storable);
}
