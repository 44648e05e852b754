-- 0210: the relay's claim in one round trip. Forward-only. Design: docs/relay.md, "One batch".
--
-- A claim used to be four statements after BEGIN, each its own round trip: the slot locks, the
-- batch read, and (for a short batch) the held-back check, then the mark and COMMIT. At 500/s the
-- batches are small and the cycle runs often; writes to PostgreSQL sockets were 20 % of the
-- service process's busy time in the drain. relay_claim does the three reads in one call, with
-- the same statements and the same snapshots as before: PL/pgSQL runs each statement of a VOLATILE
-- function under READ COMMITTED with a fresh snapshot, so the read still re-checks ownership
-- after the locks were granted, and the held-back check still sees what committed after the read.
--
-- It returns the claimed rows in (txid, id) order, then one last row with id NULL that carries the
-- slots it locked (`slots`) and whether unpublished rows of them wait behind an older open
-- transaction (`held_back`; false when the batch is full, as before).
--
-- SET enable_sort = off: the read must walk outbox_unpublished_txid_idx in (txid, id) order and stop
-- at its limit; with fewer than about 20 times the limit unpublished, the planner otherwise reads
-- the whole table and sorts every unpublished row (250–500 ms for the first claim of a 10,000-row
-- backlog against 13–22 ms in index order). Before, the lock statement set it for the rest of the
-- transaction; now it holds inside this function only.
-- SET plan_cache_mode = force_custom_plan: PL/pgSQL would otherwise switch to a generic plan after
-- five calls; the read was always planned with its values (an unnamed statement) and stays so.
-- idle_in_transaction_session_timeout is set for the rest of the transaction (set_config, local):
-- the transaction waits on Kafka holding the slot locks, and a hung process must free them.
--
-- Parameters: the instance, its clock's now, the slots to lock (NULL: every slot it leases; a
-- pipelined read passes the previous batch's), the slot count (outbox_key_slot's modulus), the
-- row limit, the ordering bound in ms, the idle timeout ('12345ms'), and the pipeline cursor
-- (txid, id) of the previous batch's last row, or NULLs.
CREATE FUNCTION relay_claim(
  p_instance text, p_now timestamptz, p_only integer[], p_slot_count integer, p_limit integer,
  p_order_wait_ms double precision, p_idle_timeout text, p_after_txid xid8, p_after_id bigint)
RETURNS TABLE (id bigint, txid text, topic text, key text, value text, headers jsonb, event_value text,
               slots integer[], held_back boolean)
LANGUAGE plpgsql VOLATILE
SET enable_sort = off
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
DECLARE
  v_slots integer[];
  v_read bigint := 0;
  v_held boolean := false;
BEGIN
  PERFORM set_config('idle_in_transaction_session_timeout', p_idle_timeout, true);

  -- The fence that keeps per-key order across instances: a shared advisory lock per slot this
  -- instance leases, held until the transaction ends. Taking a slot over needs the exclusive one
  -- (relay_lease_acquire), so nobody takes a slot while a batch of it is in flight. Advisory locks
  -- give the transaction no xid: an open claim does not hold back other sessions' xmin. The CASE
  -- tries the lock only for slots that pass the owner check (AND would not fix the order).
  SELECT coalesce(array_agg(l.slot ORDER BY l.slot), '{}') INTO v_slots
    FROM relay_leases l
   WHERE CASE WHEN l.owner = p_instance AND l.expires_at > p_now AND (p_only IS NULL OR l.slot = ANY (p_only))
              THEN pg_try_advisory_xact_lock_shared(1380273241, l.slot) ELSE false END;  -- 0x52454c59, "RELY"

  IF cardinality(v_slots) > 0 AND p_limit > 0 THEN
    -- The batch: unpublished rows of the locked slots this instance still owns (checked again with
    -- this statement's fresh snapshot: a takeover may have committed just before a lock was
    -- granted), in (txid, id) order, only rows whose transaction is below the snapshot's xmin or
    -- started more than p_order_wait_ms ago (the bounded snapshot rule, docs/relay.md). One range
    -- scan of outbox_unpublished_txid_idx; the slot set is an array (an InitPlan), which keeps the
    -- index scan (a join made the planner sort every unpublished row). The cursor is its own
    -- query text: only a bare row comparison is an index condition. ORDER BY names o.txid, the
    -- xid8 column, not the text output column.
    IF p_after_txid IS NULL THEN
      RETURN QUERY
        SELECT o.id, o.txid::text, o.topic, o.key, o.value, o.headers, o.event_value, NULL::integer[], NULL::boolean
          FROM outbox o
         WHERE o.published_at IS NULL
           AND (o.txid < pg_snapshot_xmin(pg_current_snapshot())
                OR o.created_at < statement_timestamp() - p_order_wait_ms * interval '1 millisecond')
           AND outbox_key_slot(o.key, p_slot_count) = ANY (ARRAY(
                 SELECT l.slot FROM relay_leases l WHERE l.owner = p_instance AND l.expires_at > p_now AND l.slot = ANY (v_slots)))
         ORDER BY o.txid, o.id
         LIMIT p_limit;
    ELSE
      RETURN QUERY
        SELECT o.id, o.txid::text, o.topic, o.key, o.value, o.headers, o.event_value, NULL::integer[], NULL::boolean
          FROM outbox o
         WHERE o.published_at IS NULL
           AND (o.txid < pg_snapshot_xmin(pg_current_snapshot())
                OR o.created_at < statement_timestamp() - p_order_wait_ms * interval '1 millisecond')
           AND (o.txid, o.id) > (p_after_txid, p_after_id)
           AND outbox_key_slot(o.key, p_slot_count) = ANY (ARRAY(
                 SELECT l.slot FROM relay_leases l WHERE l.owner = p_instance AND l.expires_at > p_now AND l.slot = ANY (v_slots)))
         ORDER BY o.txid, o.id
         LIMIT p_limit;
    END IF;
    GET DIAGNOSTICS v_read = ROW_COUNT;

    -- A short batch: do committed rows of these slots wait behind an older open transaction (not
    -- below xmin, and started less than p_order_wait_ms ago: older ones the read takes)? Then the
    -- relay re-polls soon instead of sleeping, as that transaction may never write to the outbox.
    IF v_read < p_limit THEN
      v_held := EXISTS (
        SELECT 1 FROM outbox o
         WHERE o.published_at IS NULL
           AND o.txid >= pg_snapshot_xmin(pg_current_snapshot())
           AND o.created_at >= statement_timestamp() - p_order_wait_ms * interval '1 millisecond'
           AND outbox_key_slot(o.key, p_slot_count) = ANY (v_slots));
    END IF;
  END IF;

  RETURN QUERY SELECT NULL::bigint, NULL::text, NULL::text, NULL::text, NULL::text, NULL::jsonb, NULL::text, v_slots, v_held;
END;
$$;
