-- 0060: the event policy, NOTIFY_EVENTS = all | terminal | none (docs/events.md, "Event policy").
-- Which status events (topic `events`) are written at all. `notify start` writes it into
-- notify_settings next to max_attempts, so every writer follows it: enqueue() and notify_enqueue
-- from any language (the `notification.queued` event), the dispatcher's outcomes, the API's
-- cancel / retry / requeue, the relay's refusals. Forward-only.
--
-- - all (the default): every event, the contract as before.
-- - terminal: only the events of a final state: notification.sent, notification.dead,
--   notification.cancelled. Not queued, retry_scheduled, requeued.
-- - none: no status events. Delivery requests, retries and the DLQ are not events and are
--   never dropped.
--
-- One place enforces it, for every writer: a BEFORE INSERT row trigger on outbox that fires only
-- for rows of topic `events` (the WHEN clause is checked without calling the function) and skips
-- the row when the policy excludes its message-type. A skipped event costs no outbox row, index
-- entries, WAL, relay work or Kafka message. Under `all` each event row pays one trigger call
-- (a primary-key read of the one-row notify_settings).
ALTER TABLE notify_settings
  ADD COLUMN events text NOT NULL DEFAULT 'all',
  ADD CONSTRAINT notify_settings_events_known CHECK (events IN ('all', 'terminal', 'none'));

CREATE FUNCTION outbox_event_policy() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT -- writers with another search_path (a Java service's) still find notify_settings
  AS $$
DECLARE
  policy text;
BEGIN
  SELECT s.events INTO policy FROM notify_settings AS s;
  IF policy = 'none'
     OR (policy = 'terminal'
         AND NEW.headers ->> 'message-type' IS DISTINCT FROM 'notification.sent'
         AND NEW.headers ->> 'message-type' IS DISTINCT FROM 'notification.dead'
         AND NEW.headers ->> 'message-type' IS DISTINCT FROM 'notification.cancelled') THEN
    RETURN NULL; -- not written
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER outbox_event_policy
  BEFORE INSERT ON outbox
  FOR EACH ROW WHEN (NEW.topic = 'events') EXECUTE FUNCTION outbox_event_policy();

COMMENT ON COLUMN notify_settings.events IS
  'NOTIFY_EVENTS: which status events are written (all, terminal: sent/dead/cancelled only, none); enforced by the outbox_event_policy trigger.';
