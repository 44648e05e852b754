-- 0230: notifications.state, channel and dead_reason check their values through domain constraints
-- instead of table CHECKs, under the same constraint names, as 0193 did for priority and ordering.
-- Forward-only. Numbers: BENCHMARKS.md ("enqueue(), session 9").
--
-- PostgreSQL reads every table CHECK of notifications again from its stored node text in each
-- statement that writes a row (10 CHECKs: 182k of the 1.49M CPU instructions of an enqueue, of
-- which these three, with their array constants, are the longest); a domain's constraints are read
-- once per backend and kept in its type cache. An enqueue: 1.491M -> 1.429M instructions
-- (callgrind, single-user backend). The same values are refused with the same SQLSTATE (23514)
-- and constraint name; the message names the domain instead of the table. Clients see the
-- columns as text (the protocol reports a domain column as its base type), and the partial
-- indexes and the queries that read them are unchanged (`state = 'queued'` still proves each
-- index's predicate).
--
-- A query parameter that PostgreSQL types from one of these columns is now of the domain, so a
-- statement that also uses the same parameter as text must cast it (`$2::text`): the parameter
-- cannot be both (`inconsistent types deduced for parameter`). The service's statements already
-- cast or compare; one test's seed statement needed the cast.
--
-- Locks: ALTER TABLE holds ACCESS EXCLUSIVE on notifications until the migration commits. A change
-- to a domain over the same type does not rewrite the table; the indexes with these columns as
-- keys keep their storage, the six partial indexes whose predicate tests state are built again
-- (they hold queued rows, dead rows and terminal rows: on a large table this is the long part),
-- and each ALTER DOMAIN ... ADD CONSTRAINT validates the rows in one sequential scan. The state-count INSERT trigger (0220) names state in its WHEN clause, so it is
-- dropped and created again, the same.
CREATE DOMAIN notification_state AS text;
CREATE DOMAIN notification_channel AS text;
CREATE DOMAIN notification_dead_reason AS text;
DROP TRIGGER notification_state_counts_insert ON notifications;
ALTER TABLE notifications
  DROP CONSTRAINT notifications_state_known,
  DROP CONSTRAINT notifications_channel_known,
  DROP CONSTRAINT notifications_dead_reason_known,
  ALTER COLUMN state TYPE notification_state,
  ALTER COLUMN channel TYPE notification_channel,
  ALTER COLUMN dead_reason TYPE notification_dead_reason;
ALTER DOMAIN notification_state ADD CONSTRAINT notifications_state_known CHECK (VALUE = ANY ('{queued,sent,dead,cancelled}'::text[]));
ALTER DOMAIN notification_channel ADD CONSTRAINT notifications_channel_known CHECK (VALUE = ANY ('{email,sms,webhook}'::text[]));
ALTER DOMAIN notification_dead_reason ADD CONSTRAINT notifications_dead_reason_known
  CHECK (VALUE = ANY ('{permanent,exhausted,expired,suppressed,publish_failed,endpoint_disabled}'::text[]));
CREATE TRIGGER notification_state_counts_insert AFTER INSERT ON notifications
  FOR EACH ROW WHEN (NEW.state <> 'queued') EXECUTE FUNCTION notification_state_counts_insert_row();
