-- 0240: drops relay_claim (0210). Forward-only.
--
-- Session 8 built the relay's claim as this one function (two round trips per batch instead of six
-- or seven) and reverted the relay's use of it (916b40f): cheaper claims came sooner and made the
-- Kafka batches smaller (476 sendBatch calls for 500 rows against 251), and the end-to-end drain
-- and CPU per notification got worse in three of three pairs (BENCHMARKS.md, session 8's lever
-- table). Nothing calls it; the relay's statements are in packages/relay/src/sql.
DROP FUNCTION relay_claim(text, timestamptz, integer[], integer, integer, double precision, text, xid8, bigint);
