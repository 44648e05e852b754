import { SCHEMA_DOCUMENTS } from './schema-documents.js';

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
 * The contract's JSON Schemas (draft 2020-12, each with its `$id`): message values and, for each
 * kind of message, its headers. A fresh copy on every call. They are compiled into the code from
 * the package's `schemas/` folder, whose files are also importable as
 * `@notify/contract/schemas/<name>.json`.
 */
export function contractJsonSchemas(): Record<ContractSchemaName, Record<string, unknown>> {
  const schemas = {} as Record<ContractSchemaName, Record<string, unknown>>;
  for (const name of CONTRACT_SCHEMA_NAMES) {
    schemas[name] = structuredClone(SCHEMA_DOCUMENTS[name]!);
  }
  return schemas;
}
