import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv, type AnySchemaObject } from 'ajv';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { buildDeliveryRequest, buildStatusEvent, type ContractMessage, type MessageSubject } from './builders.js';
import { HEADERS } from './headers.js';
import { CONTRACT_SCHEMA_NAMES, contractJsonSchemas } from './json-schemas.js';
import { messageKey } from './message-key.js';
import { parseDeliveryRequest } from './parse.js';
import { TOPICS } from './topics.js';

// A parsed YAML tree, read loosely: the first test checks its shape against the AsyncAPI spec.
type Node = Record<string, any>;

const docUrl = new URL('../asyncapi.yaml', import.meta.url);
const doc = parseYaml(readFileSync(docUrl, 'utf8')) as Node;

const schemas = contractJsonSchemas();
const ajv = new Ajv2020({ strict: true });
addFormats.default(ajv);
for (const schema of Object.values(schemas)) ajv.addSchema(schema);

/** The node a local `#/a/b` reference points at. */
function resolveLocal(ref: string): Node | undefined {
  expect(ref.startsWith('#/'), ref).toBe(true);
  let node: unknown = doc;
  for (const part of ref.slice(2).split('/')) {
    const key = part.replaceAll('~1', '/').replaceAll('~0', '~');
    node = typeof node === 'object' && node !== null ? (node as Node)[key] : undefined;
  }
  return node as Node | undefined;
}

/** The object itself, or the one its `$ref` points at. */
function deref(node: Node): Node {
  if (typeof node.$ref !== 'string') return node;
  const target = resolveLocal(node.$ref);
  expect(target, node.$ref).toBeDefined();
  return target!;
}

/** The compiled JSON Schema a `./schemas/<file>` reference names. */
function shippedSchema(ref: string): ValidateFunction {
  const name = new URL(ref, docUrl).pathname
    .split('/')
    .pop()!
    .replace(/\.json$/, '');
  expect(CONTRACT_SCHEMA_NAMES).toContain(name);
  return ajv.getSchema(schemas[name as keyof typeof schemas].$id as string) as ValidateFunction;
}

function allRefs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) allRefs(item, out);
  else if (typeof node === 'object' && node !== null) {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') out.push(value);
      else allRefs(value, out);
    }
  }
  return out;
}

// The records the examples must be: the golden records of builders.test.ts.
const traced: MessageSubject = {
  id: 'ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV',
  tenant_id: 'acme',
  channel: 'email',
  recipient: 'ada@example.com',
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
};
const untraced: MessageSubject = {
  id: 'ntf_01HZY8Q5W3K9V2N7M4P6R8T0XB',
  tenant_id: 'globex',
  channel: 'webhook',
  recipient: 'https://hooks.globex.test/notify',
  traceparent: null,
};
const emptyTrace: MessageSubject = {
  id: 'ntf_01J0000000000000000000000C',
  tenant_id: 'initech/eu',
  channel: 'sms',
  recipient: '+15555550100',
  traceparent: '',
};
const at = new Date('2026-05-01T12:00:00Z');
const later = new Date('2026-05-01T12:00:01.5Z');
const GOLDEN: Record<string, Record<string, ContractMessage>> = {
  deliveryRequest: {
    'retry-with-traceparent': buildDeliveryRequest(traced, 2, at, TOPICS.retry('2s')),
    'first-attempt': buildDeliveryRequest(untraced, 1, at),
  },
  statusEvent: {
    queued: buildStatusEvent(untraced, { type: 'notification.queued', state: 'queued', attempts: 0, next_attempt_at: at, occurred_at: at }),
    'retry-scheduled': buildStatusEvent(traced, {
      type: 'notification.retry_scheduled',
      state: 'queued',
      attempts: 1,
      last_error: 'provider returned 503',
      next_attempt_at: later,
      occurred_at: at,
    }),
    sent: buildStatusEvent(traced, { type: 'notification.sent', state: 'sent', attempts: 2, occurred_at: later }),
    dead: buildStatusEvent(traced, {
      type: 'notification.dead',
      state: 'dead',
      attempts: 4,
      dead_reason: 'exhausted',
      last_error: 'provider returned 503',
      occurred_at: at,
    }),
    cancelled: buildStatusEvent(emptyTrace, {
      type: 'notification.cancelled',
      state: 'cancelled',
      attempts: 1,
      last_error: 'SMS gateway said "busy" – réessayez\nlater',
      occurred_at: at,
    }),
    requeued: buildStatusEvent(untraced, {
      type: 'notification.requeued',
      state: 'queued',
      attempts: 4,
      last_error: 'connect ECONNREFUSED 127.0.0.1:9',
      next_attempt_at: at,
      occurred_at: at,
    }),
  },
};

describe('asyncapi.yaml', () => {
  it('is a valid AsyncAPI 3.0.0 document (the official JSON Schema of the spec)', () => {
    expect(doc.asyncapi).toBe('3.0.0');
    const spec = createRequire(import.meta.url)('@asyncapi/specs/schemas/3.0.0.json') as AnySchemaObject;
    // The spec's schema is draft-07, bundles its own copy of the draft-07 meta-schema (so ajv's is
    // left out) and uses annotations ajv's strict mode does not know.
    const specAjv = new Ajv({ strict: false, allErrors: true, meta: false, validateSchema: false });
    addFormats.default(specAjv);
    const validate = specAjv.compile(spec);
    expect(validate(doc), specAjv.errorsText(validate.errors, { separator: '\n' })).toBe(true);
  });

  it('has the five channels at the topic names, the prefix (and tier) as parameters', () => {
    const addresses = Object.fromEntries(Object.entries(doc.channels as Node).map(([name, channel]) => [name, channel.address]));
    expect(addresses).toEqual({
      requests: `{prefix}.${TOPICS.requests}`,
      requestsHigh: `{prefix}.${TOPICS.requestsHigh}`,
      retry: `{prefix}.${TOPICS.retry('{tier}')}`,
      events: `{prefix}.${TOPICS.events}`,
      dlq: `{prefix}.${TOPICS.dlq}`,
    });
    for (const channel of Object.values(doc.channels as Node)) {
      const inAddress = [...(channel.address as string).matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      expect(Object.keys(channel.parameters).sort()).toEqual(inAddress.sort());
      for (const parameter of Object.values(channel.parameters as Node)) expect(deref(parameter)).toBeDefined();
    }
    expect(deref(doc.components.parameters.prefix).default).toBe('notify');
  });

  it('carries each message on its channels', () => {
    const messagesOf = (channel: string) => Object.values(doc.channels[channel].messages as Node).map((m) => deref(m).name);
    expect(messagesOf('requests')).toEqual(['DeliveryRequest']);
    expect(messagesOf('requestsHigh')).toEqual(['DeliveryRequest']);
    expect(messagesOf('retry')).toEqual(['DeliveryRequest']);
    expect(messagesOf('events')).toEqual(['StatusEvent']);
    expect(messagesOf('dlq')).toEqual(['DeadLetter']);
  });

  it('says who sends and who receives on every channel, with messages of that channel', () => {
    const actions = new Map<string, string[]>();
    for (const operation of Object.values(doc.operations as Node)) {
      const channelRef = operation.channel.$ref as string;
      expect(resolveLocal(channelRef), channelRef).toBeDefined();
      const channel = channelRef.replace('#/channels/', '');
      actions.set(channel, [...(actions.get(channel) ?? []), operation.action]);
      for (const message of operation.messages as Node[]) {
        expect(message.$ref).toMatch(new RegExp(`^#/channels/${channel}/messages/`));
        expect(resolveLocal(message.$ref), message.$ref).toBeDefined();
      }
    }
    for (const channel of Object.keys(doc.channels))
      expect([...new Set(actions.get(channel))].sort(), channel).toEqual(['receive', 'send']);
    // events has two readers: other teams, and the service's own callbacks consumer.
    expect(actions.get('events')?.filter((a) => a === 'receive')).toHaveLength(2);
  });

  it('refers only to shipped schema files, and to all of them', () => {
    const external = allRefs(doc).filter((ref) => !ref.startsWith('#'));
    for (const ref of external) {
      expect(ref).toMatch(/^\.\/schemas\/[a-z0-9.-]+\.json$/);
      expect(existsSync(new URL(ref, docUrl)), ref).toBe(true);
    }
    expect(new Set(external.map((ref) => ref.slice('./schemas/'.length, -'.json'.length)))).toEqual(new Set(CONTRACT_SCHEMA_NAMES));
    for (const message of Object.values(doc.components.messages as Node)) expect(typeof message.headers.$ref).toBe('string');
  });

  it('names exactly the HEADERS in its header schemas and examples', () => {
    const names = new Set<string>();
    for (const message of Object.values(doc.components.messages as Node)) {
      const headers = schemas[(message.headers.$ref as string).slice('./schemas/'.length, -'.json'.length) as keyof typeof schemas];
      for (const name of Object.keys(headers.properties as Node)) names.add(name);
      for (const example of message.examples as Node[])
        for (const name of Object.keys(example.headers)) expect(Object.values(HEADERS)).toContain(name);
    }
    expect([...names].sort()).toEqual(Object.values(HEADERS).sort());
  });

  it('has examples that validate against their payload and header schemas', () => {
    let checked = 0;
    for (const message of Object.values(doc.components.messages as Node)) {
      const validateHeaders = shippedSchema(message.headers.$ref);
      const validatePayload = typeof message.payload.$ref === 'string' ? shippedSchema(message.payload.$ref) : undefined;
      expect(message.examples.length).toBeGreaterThan(0);
      for (const example of message.examples as Node[]) {
        expect(validateHeaders(example.headers), `${example.name}: ${ajv.errorsText(validateHeaders.errors)}`).toBe(true);
        if (validatePayload)
          expect(validatePayload(example.payload), `${example.name}: ${ajv.errorsText(validatePayload.errors)}`).toBe(true);
        checked++;
      }
    }
    expect(checked).toBe(10);
  });

  it('has the golden records as examples: every request, every status event type', () => {
    for (const [messageName, golden] of Object.entries(GOLDEN)) {
      const examples = doc.components.messages[messageName].examples as Node[];
      expect(examples.map((e) => e.name)).toEqual(Object.keys(golden));
      for (const example of examples) {
        const record = golden[example.name]!;
        expect(JSON.stringify(example.payload), example.name).toBe(record.value);
        expect(Object.entries(example.headers), example.name).toEqual(Object.entries(record.headers));
      }
    }
    const types = (doc.components.messages.statusEvent.examples as Node[]).map((e) => e.payload.type);
    expect(new Set(types).size).toBe(6);
  });

  it('has dead-letter examples whose reason is what the parser says about their bytes', () => {
    for (const example of doc.components.messages.deadLetter.examples as Node[]) {
      expect(parseDeliveryRequest(example.payload as string)).toEqual({ ok: false, reason: example.headers[HEADERS.dlqReason] });
    }
  });

  it('describes the key: its schema accepts the keys messageKey makes', () => {
    const keySchema = deref(doc.components.messages.deliveryRequest.bindings.kafka.key);
    expect(deref(doc.components.messages.statusEvent.bindings.kafka.key)).toEqual(keySchema);
    const validateKey = ajv.compile({ type: keySchema.type, pattern: keySchema.pattern });
    const keys = [...keySchema.examples, ...Object.values(GOLDEN).flatMap((g) => Object.values(g).map((m) => m.key))];
    for (const key of keys) expect(validateKey(key), key).toBe(true);
    expect(keySchema.examples).toContain(messageKey('acme', 'email', 'ada@example.com'));
    expect(validateKey('acme/pager/tfyF5VdV-eDQMKEKtEKbay')).toBe(false);
    expect(validateKey('acme/email/ada@example.com')).toBe(false);
  });
});
