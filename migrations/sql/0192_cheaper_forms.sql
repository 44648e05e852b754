-- 0192: two cheaper forms, same values and invariants. Forward-only. Numbers: BENCHMARKS.md
-- ("enqueue(), session 7"), callgrind per enqueue on a single-user backend.
--
-- 1. notify_ulid (0006) wrote the 10 time characters of an id with ten substr() lookups, each a
--    shift, a mask, a cast and an addition: about 60 expression nodes that plpgsql compiles again
--    in every transaction (the expression is inlined into notify_enqueue_item). Now the ten 5-bit
--    groups of the milliseconds are spread to 6-bit groups (group i shifted left by i, the whole by
--    4 more), so the base64 text of those 8 bytes has one character per group, and one translate()
--    maps base64's first 32 characters to Crockford's. The same 10 characters for every ms below
--    2^48 (checked against 0006's formula on 200,000 values; packages/outbox/test/ulid-sql.test.ts
--    checks edge values against the JavaScript encoding). The random part is unchanged.
--    -16k instructions per enqueue.
-- 2. notification_state_counts' shard range (0020) is a domain constraint instead of a table
--    CHECK, with the same name. PostgreSQL reads a table CHECK's stored text again and plans it in
--    every statement that writes the table, which the state-count trigger does in every statement
--    that writes notifications (28k instructions); a domain's constraint is read once per backend
--    and kept in its type cache. Every value written to shard is still checked. -18k per enqueue.
--    Locks: ALTER TABLE rewrites notification_state_counts (at most 4 states x 3 channels x 16
--    shards = 192 rows) under ACCESS EXCLUSIVE: writers of notifications wait for that instant.

-- Group i of the milliseconds (bits 5i to 5i+4) moves to bits 6i+4 to 6i+8: the eight bytes'
-- base64 characters 1 to 10 are then the ten groups, most significant first, each below 32.
CREATE OR REPLACE FUNCTION notify_ulid(ms bigint, random bytea) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN translate(left(encode(int8send(((ms & 31) << 4) | ((ms & 992) << 5) |
                                    ((ms & 31744) << 6) | ((ms & 1015808) << 7) |
                                    ((ms & 32505856) << 8) | ((ms & 1040187392) << 9) |
                                    ((ms & 33285996544) << 10) | ((ms & 1065151889408) << 11) |
                                    ((ms & 34084860461056) << 12) | ((ms & 1090715534753792) << 13)), 'base64'), 10),
                   'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef', '0123456789ABCDEFGHJKMNPQRSTVWXYZ')
      || translate(encode(substring(overlay(random PLACING '' FROM 7 FOR 3) FROM 1 FOR 12), 'base64'),
                   'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/',
                   '0123456789ABCDEFGHJKMNPQRSTVWXYZ0123456789ABCDEFGHJKMNPQRSTVWXYZ');

CREATE DOMAIN notification_state_counts_shard AS integer
  CONSTRAINT notification_state_counts_shard_in_range CHECK (VALUE >= 0 AND VALUE < 16);
ALTER TABLE notification_state_counts
  DROP CONSTRAINT notification_state_counts_shard_in_range,
  ALTER COLUMN shard TYPE notification_state_counts_shard;
