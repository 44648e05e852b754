-- 0102: erasure of a recipient's personal data (POST /v1/erasures, issue 15). Forward-only.
-- What is erased where: docs/retention.md ("Erasure").

-- One row per erasure request, for audit: who asked, when, how much was erased. The address
-- itself is not stored, only the sha256 of its trimmed, lower-cased form, so "was this address
-- erased, and when?" can be answered for an address someone presents, without keeping it.
CREATE TABLE erasures (
  id               text        PRIMARY KEY,            -- ers_<ULID>
  tenant_id        text        NOT NULL,
  recipient_sha256 text        NOT NULL,
  counts           jsonb       NOT NULL,               -- what was erased, by kind (the API's answer)
  api_key_id       text,
  created_at       timestamptz NOT NULL
);
CREATE INDEX erasures_tenant_idx ON erasures (tenant_id, recipient_sha256);
