-- 0190: the five "value is one of" CHECKs of notifications, as one array constant each. Forward-only.
-- Same names, same rules, same refusals; numbers: BENCHMARKS.md ("enqueue(), session 7").
--
-- PostgreSQL reads every CHECK of a table again from its stored node text (pg_constraint.conbin)
-- in every statement that writes a row, and folds it into an expression before it runs it: for
-- the one-row INSERT of an enqueue, the 13 CHECKs of notifications and notification_state_counts
-- cost about 360k CPU instructions of the ~1.9M (callgrind, single-user backend). `x IN ('a', 'b')`
-- is stored as `x = ANY (ARRAY['a'::text, 'b'::text])`: an array expression of one constant node
-- per value, which every statement reads and folds into an array again. `x = ANY ('{a,b}'::text[])`
-- is stored as that array, one constant: 4,766 characters of node text become 2,878, and an
-- enqueue costs 55k instructions less (1.902M -> 1.847M).
--
-- Locks: ALTER TABLE takes ACCESS EXCLUSIVE on notifications until the migration commits. The
-- table is not rewritten; the five re-added CHECKs are validated together in one sequential scan
-- of notifications (every existing row already satisfies them: the old CHECKs said the same).
ALTER TABLE notifications
  DROP CONSTRAINT notifications_state_known,
  ADD CONSTRAINT notifications_state_known CHECK (state = ANY ('{queued,sent,dead,cancelled}'::text[])),
  DROP CONSTRAINT notifications_channel_known,
  ADD CONSTRAINT notifications_channel_known CHECK (channel = ANY ('{email,sms,webhook}'::text[])),
  DROP CONSTRAINT notifications_dead_reason_known,
  ADD CONSTRAINT notifications_dead_reason_known
    CHECK (dead_reason = ANY ('{permanent,exhausted,expired,suppressed,publish_failed,endpoint_disabled}'::text[])),
  DROP CONSTRAINT notifications_priority_known,
  ADD CONSTRAINT notifications_priority_known CHECK (priority = ANY ('{normal,high}'::text[])),
  DROP CONSTRAINT notifications_ordering_known,
  ADD CONSTRAINT notifications_ordering_known CHECK (ordering = ANY ('{relaxed,strict}'::text[]));
