-- 0220: the notify_notifications gauge counts queued notifications when it reads them, from the
-- partial index of queued rows, and notification_state_counts (0020) keeps the other states
-- only. An enqueue no longer writes a counter. Forward-only. Numbers: BENCHMARKS.md
-- ("enqueue(), session 8").
--
-- Every enqueue inserts one queued row, and 0020's statement-level INSERT trigger then upserted a
-- counter row from its transition table: about 130k of the 1.57M CPU instructions of an enqueue
-- (callgrind, single-user backend): the transition table, the plpgsql call, the start-up of the
-- upsert's plan, the counter row's lock and new version. Queued rows are already entries of
-- notifications_queued_channel_created_idx (0120); the reader counts them there in the same
-- statement, so in the same snapshot, as it sums the counter table, and the sum stays exactly as
-- consistent as the rows, whatever the concurrency. The reader's cost follows the backlog of queued
-- rows instead of being constant (docs/observability.md, "How the gauges read").
--
-- What the triggers count now:
-- - INSERT: a row inserted in another state than queued (fixtures, imports; the service never
--   does), by a row trigger whose WHEN clause is false for a queued row: an enqueue fires nothing.
--   The trigger appends one row to notification_state_count_imports (no index, no lock: a bulk
--   import of a million terminal rows does not update one counter row a million times in one
--   transaction, whose versions every next update would walk), and the reader folds those rows
--   into the counter table.
-- - UPDATE and DELETE: as before, without the queued side of a change (queued -> sent: +1 sent).
--
LOCK TABLE notifications IN SHARE ROW EXCLUSIVE MODE;

DROP TRIGGER notification_state_counts_insert ON notifications;

-- 0020's function for UPDATE and DELETE statements, leaving queued rows out.
CREATE OR REPLACE FUNCTION notification_state_counts_apply() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  -- One upsert per (state, channel) whose count changed; an UPDATE that kept the state nets to 0
  -- and writes nothing. Sorted, so two statements lock shard rows in the same order.
  IF TG_OP = 'DELETE' THEN
    INSERT INTO notification_state_counts AS c (state, channel, shard, count)
      SELECT state, channel, pg_backend_pid() % 16, -count(*) FROM old_rows WHERE state <> 'queued'
      GROUP BY state, channel ORDER BY state, channel
      ON CONFLICT (state, channel, shard) DO UPDATE SET count = c.count + excluded.count;
  ELSE
    INSERT INTO notification_state_counts AS c (state, channel, shard, count)
      SELECT state, channel, pg_backend_pid() % 16, sum(delta)
      FROM (SELECT state, channel, 1 AS delta FROM new_rows WHERE state <> 'queued'
            UNION ALL SELECT state, channel, -1 FROM old_rows WHERE state <> 'queued') d
      GROUP BY state, channel HAVING sum(delta) <> 0 ORDER BY state, channel
      ON CONFLICT (state, channel, shard) DO UPDATE SET count = c.count + excluded.count;
  END IF;
  RETURN NULL;
END;
$$;

-- Rows inserted in a state other than queued, one row each, until the reader folds them into
-- notification_state_counts (packages/cli notificationCountByState).
CREATE TABLE notification_state_count_imports (
  state   text NOT NULL,
  channel text NOT NULL
);

CREATE FUNCTION notification_state_counts_insert_row() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO notification_state_count_imports (state, channel) VALUES (NEW.state, NEW.channel);
  RETURN NULL;
END;
$$;

CREATE TRIGGER notification_state_counts_insert AFTER INSERT ON notifications
  FOR EACH ROW WHEN (NEW.state <> 'queued') EXECUTE FUNCTION notification_state_counts_insert_row();

DELETE FROM notification_state_counts WHERE state = 'queued';
