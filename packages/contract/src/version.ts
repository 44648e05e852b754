/**
 * The schema version of this contract: the `v` field of every message value and the value of the
 * `schema-version` header. A consumer rejects (or dead-letters) a `v` it does not know.
 */
export const CONTRACT_VERSION = 1 as const;
