-- 0020: notification counts by (state, channel), kept by triggers in the same transactions that
-- change notifications, so the notify_notifications gauge reads ~a hundred rows instead of
-- counting the whole table. Forward-only. Numbers: docs/observability.md ("How the gauges read").
--
-- Why sharded: one row per (state, channel) would be updated by every enqueue, serialising
-- concurrent enqueue transactions on that row lock until commit. Each backend writes its own shard
-- (pg_backend_pid() % 16), so two sessions collide only when their pids share a shard, and the
-- reader sums at most 4 states x 3 channels x 16 shards = 192 rows.
-- Why statement triggers with transition tables: a batch insert (enqueueMany, the dispatcher's
-- group commit of outcomes) pays one counter upsert per (state, channel) it touched, not per row.
CREATE TABLE notification_state_counts (
  state   text    NOT NULL,
  channel text    NOT NULL,
  shard   integer NOT NULL,
  count   bigint  NOT NULL,
  PRIMARY KEY (state, channel, shard),
  CONSTRAINT notification_state_counts_shard_in_range CHECK (shard >= 0 AND shard < 16)
);

CREATE FUNCTION notification_state_counts_apply() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  -- One upsert per (state, channel) whose count changed; an UPDATE that kept the state nets to 0
  -- and writes nothing. Sorted, so two statements lock shard rows in the same order.
  IF TG_OP = 'INSERT' THEN
    INSERT INTO notification_state_counts AS c (state, channel, shard, count)
      SELECT state, channel, pg_backend_pid() % 16, count(*) FROM new_rows GROUP BY state, channel ORDER BY state, channel
      ON CONFLICT (state, channel, shard) DO UPDATE SET count = c.count + excluded.count;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO notification_state_counts AS c (state, channel, shard, count)
      SELECT state, channel, pg_backend_pid() % 16, -count(*) FROM old_rows GROUP BY state, channel ORDER BY state, channel
      ON CONFLICT (state, channel, shard) DO UPDATE SET count = c.count + excluded.count;
  ELSE
    INSERT INTO notification_state_counts AS c (state, channel, shard, count)
      SELECT state, channel, pg_backend_pid() % 16, sum(delta)
      FROM (SELECT state, channel, 1 AS delta FROM new_rows UNION ALL SELECT state, channel, -1 FROM old_rows) d
      GROUP BY state, channel HAVING sum(delta) <> 0 ORDER BY state, channel
      ON CONFLICT (state, channel, shard) DO UPDATE SET count = c.count + excluded.count;
  END IF;
  RETURN NULL;
END;
$$;

-- No concurrent writer may slip between the backfill and the triggers.
LOCK TABLE notifications IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER notification_state_counts_insert AFTER INSERT ON notifications
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION notification_state_counts_apply();
CREATE TRIGGER notification_state_counts_update AFTER UPDATE ON notifications
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION notification_state_counts_apply();
CREATE TRIGGER notification_state_counts_delete AFTER DELETE ON notifications
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION notification_state_counts_apply();

INSERT INTO notification_state_counts (state, channel, shard, count)
  SELECT state, channel, 0, count(*) FROM notifications GROUP BY state, channel;
