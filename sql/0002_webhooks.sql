-- 0002: indexes for the webhook delivery log and its retention (no new columns).
-- The operator's delivery listing pages an instance's outbox newest first, with or without a state filter.
CREATE INDEX IF NOT EXISTS outbox_instance ON outbox (instance_id, id);
-- pruneDeliveries: finished rows by age.
CREATE INDEX IF NOT EXISTS outbox_finished_age ON outbox (created_at) WHERE state <> 'pending';
