import { readFileSync } from 'node:fs';

/** The JSON Schema files shipped in the package's `schemas/` folder, by file name without `.json`. */
export const CONTRACT_SCHEMA_NAMES = Object.freeze([
  'delivery-request.v1',
  'status-event.v1',
  'delivery-request-headers.v1',
  'status-event-headers.v1',
  'dead-letter-headers.v1',
] as const);
/** One of `CONTRACT_SCHEMA_NAMES`. */
export type ContractSchemaName = (typeof CONTRACT_SCHEMA_NAMES)[number];

/**
 * The contract's JSON Schemas (draft 2020-12, each with its `$id`), read from the package's
 * `schemas/` folder: message values and, for each kind of message, its headers. A fresh copy on
 * every call. The same files are importable as `@notify/contract/schemas/<name>.json`, which is
 * the way to go for a bundle that does not keep the package's files beside it.
 */
export function contractJsonSchemas(): Record<ContractSchemaName, Record<string, unknown>> {
  const schemas = {} as Record<ContractSchemaName, Record<string, unknown>>;
  for (const name of CONTRACT_SCHEMA_NAMES) {
    // src/ and dist/ both sit beside schemas/.
    const file = new URL(`../schemas/${name}.json`, import.meta.url);
    schemas[name] = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  }
  return schemas;
}
