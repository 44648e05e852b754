-- 0193: notifications.priority and notifications.ordering check their values through a domain
-- constraint instead of a table CHECK, under the same constraint names. Forward-only. Numbers:
-- BENCHMARKS.md ("enqueue(), session 7").
--
-- PostgreSQL reads every table CHECK again from its stored text and plans it in each statement
-- that writes the table (0190's header); a domain's constraints are read once per backend and
-- kept in its type cache, and checked whenever a value is stored in the column. For these two
-- columns, which no index reads, that is -38k of the 1.61M instructions of an enqueue (callgrind,
-- single-user backend). The same values are refused with the same SQLSTATE (23514) and constraint
-- name; the message names the domain instead of the table. Clients see the columns as text (the
-- protocol reports a domain column as its base type). state, channel and dead_reason stay table
-- CHECKs: partial indexes read them, and changing their type would rebuild those indexes.
--
-- Locks: ALTER TABLE holds ACCESS EXCLUSIVE on notifications until the migration commits; a change
-- to a domain over the same type without constraints neither rewrites the table nor rebuilds an
-- index (no index has these columns). Each ALTER DOMAIN ... ADD CONSTRAINT then validates the rows
-- in one sequential scan of notifications (they all satisfy it: the dropped CHECKs said the same).
CREATE DOMAIN notification_priority AS text;
CREATE DOMAIN notification_ordering AS text;
ALTER TABLE notifications
  DROP CONSTRAINT notifications_priority_known,
  DROP CONSTRAINT notifications_ordering_known,
  ALTER COLUMN priority TYPE notification_priority,
  ALTER COLUMN ordering TYPE notification_ordering;
ALTER DOMAIN notification_priority ADD CONSTRAINT notifications_priority_known CHECK (VALUE = ANY ('{normal,high}'::text[]));
ALTER DOMAIN notification_ordering ADD CONSTRAINT notifications_ordering_known CHECK (VALUE = ANY ('{relaxed,strict}'::text[]));
