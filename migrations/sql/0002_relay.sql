-- 0002: what the relay needs to publish outbox rows in order from several instances.
-- Forward-only. Design and numbers: docs/relay.md.

-- The relay claims in (txid, id) order: rows of one transaction in insert order, transactions in
-- xid order, and only below the snapshot's xmin (see docs/relay.md, "the snapshot rule"). This
-- index serves that ORDER BY … LIMIT, the `txid < xmin` bound and the pipeline's (txid, id)
-- cursor as one index range scan, and the "rows held back by an open transaction" check as
-- another. It is the only index on unpublished rows: a second one on (id) would cost every
-- enqueue an index insert per outbox row for nothing.
CREATE INDEX outbox_unpublished_txid_idx ON outbox (txid, id) WHERE published_at IS NULL;

-- The hash slot of a message key. Every row of one key maps to one slot, and one relay at a time
-- holds a slot, so one key is published by one relay at a time. `slots` is the number of rows in
-- relay_leases; change it only with every relay stopped (a key would move to another slot).
CREATE FUNCTION outbox_key_slot(key text, slots integer) RETURNS integer
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN (hashtext(key) & 2147483647) % slots;

-- One row per hash slot. A relay publishes rows of a slot only while it holds the slot's lease
-- (owner = its instance id, expires_at in the future). A claim transaction holds a shared advisory
-- lock per slot (pg_try_advisory_xact_lock_shared(0x52454c59, slot)) until it commits, and a
-- takeover needs the exclusive one, so a slot never changes hands while a batch of it is in
-- flight: the fence that keeps per-key order across instances. Advisory locks rather than row
-- locks: they give the claim transaction no xid, so it does not hold back other relays' xmin.
CREATE TABLE relay_leases (
  slot       integer PRIMARY KEY,
  owner      text,                                -- relay instance id; NULL: free
  expires_at timestamptz,                         -- the owner renews it every heartbeat
  CONSTRAINT relay_leases_slot_in_range CHECK (slot >= 0 AND slot < 4096),
  CONSTRAINT relay_leases_owner_iff_expiry CHECK ((owner IS NULL) = (expires_at IS NULL))
);
INSERT INTO relay_leases (slot) SELECT generate_series(0, 63);

-- Live relay instances, heartbeated; each relay takes a fair share of the slots of the live set.
CREATE TABLE relay_instances (
  instance_id text        PRIMARY KEY,
  started_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  sleeping    boolean     NOT NULL DEFAULT false,  -- waiting for a NOTIFY: the outbox trigger rings only then
  CONSTRAINT relay_instances_expiry_after_start CHECK (expires_at >= started_at)
);

-- Wake-up: a relay that found nothing to do marks itself sleeping, claims once more, and waits
-- for a NOTIFY (or its poll interval). The trigger rings only while some relay sleeps, once per
-- inserting statement (PostgreSQL folds identical notifications of a transaction into one).
-- Why not always: a transaction that ran pg_notify takes PostgreSQL's global notify lock at commit
-- and holds it through its WAL flush, so the commits of notifying transactions cannot share a
-- flush. Measured (pgbench, single-row INSERT + COMMIT, 2 shared cores): about 1.9–2.8k commits/s
-- with 4 or 16 clients when every insert notifies, against 4.6k/s (4 clients) and 8.5–9.9k/s (16)
-- without. Under load the relays are busy, nobody sleeps, and enqueue commits run unserialised;
-- idle, the first enqueue wakes them. A row committed in the instant between a relay's last
-- claim and its flag becoming visible waits at most the poll interval (the fallback).
CREATE FUNCTION outbox_notify() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM relay_instances WHERE sleeping) THEN
    PERFORM pg_notify('notify_outbox', '');
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER outbox_notify_insert
  AFTER INSERT ON outbox
  FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
