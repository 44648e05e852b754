-- 0310: the four per-tenant list indexes in ascending id order. Forward-only.
--
-- notifications_tenant_id_idx, _recipient_idx (0001), _state_idx and _channel_idx (0031) ended in
-- `id DESC`. Ids are time-ordered ULIDs, so in a descending index every new notification of a
-- tenant (of a state, channel or recipient) is the smallest key of its range: each insert lands at
-- the left end of the range, and a full leaf page splits in half with only the left half ever
-- written again. Those indexes stayed about half full. In ascending order a new id is the largest
-- of its range: PostgreSQL splits such a page at the new item (a localized increasing insertion)
-- and, for a single tenant, inserts on the index's rightmost page without a descent from the root.
-- Measured (BENCHMARKS.md, session 30; single-client enqueues of one tenant to 50 recipients, two
-- batches of 22,000 into the same table): the four indexes 1,348 then 2,705 pages before, 941 then
-- 1,868 after (-30 %); WAL per enqueue 2,085 and 2,091 bytes before, 1,936 both times after
-- (-7 %). With 50 tenants (32,000 enqueues) the sizes were alike: 1,885 and 1,876 pages. A
-- backward index scan serves every `ORDER BY id DESC` that the descending index served (the API's
-- and console's lists, keyset paging with `id < cursor`), and `ORDER BY id` (the strict-ordering
-- predecessor, the erasure's lock order) now reads forward.
--
-- The new indexes have new names, so that on a large table they can be built first by hand,
-- without blocking writes, with the same statements and CONCURRENTLY (IF NOT EXISTS then skips
-- them here); this file then only drops the old ones, a short exclusive lock each. Run as it is,
-- it takes a SHARE lock on notifications (writes wait) for as long as it reads the table, four
-- times.
--
-- A CREATE INDEX CONCURRENTLY that failed leaves an invalid index of that name, which IF NOT
-- EXISTS would take for built: then the lists would lose their index when the old ones go. Refuse.
DO $$
DECLARE
  invalid text;
BEGIN
  SELECT string_agg(c.relname, ', ' ORDER BY c.relname) INTO invalid
    FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
   WHERE i.indrelid = 'notifications'::regclass AND NOT i.indisvalid
     AND c.relname IN ('notifications_tenant_id_asc_idx', 'notifications_tenant_recipient_asc_idx',
                       'notifications_tenant_state_asc_idx', 'notifications_tenant_channel_asc_idx');
  IF invalid IS NOT NULL THEN
    RAISE EXCEPTION '0310: % invalid (a CREATE INDEX CONCURRENTLY that did not finish); DROP INDEX it and build it again, or drop it and let this migration build it', invalid
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
END $$;

CREATE INDEX IF NOT EXISTS notifications_tenant_id_asc_idx ON notifications (tenant_id, id);
CREATE INDEX IF NOT EXISTS notifications_tenant_recipient_asc_idx ON notifications (tenant_id, recipient, id);
CREATE INDEX IF NOT EXISTS notifications_tenant_state_asc_idx ON notifications (tenant_id, state, id);
CREATE INDEX IF NOT EXISTS notifications_tenant_channel_asc_idx ON notifications (tenant_id, channel, id);

DROP INDEX IF EXISTS notifications_tenant_id_idx;
DROP INDEX IF EXISTS notifications_tenant_recipient_idx;
DROP INDEX IF EXISTS notifications_tenant_state_idx;
DROP INDEX IF EXISTS notifications_tenant_channel_idx;
