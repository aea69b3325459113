-- 0021: an index of each instance's outbox rows by state, newest last, for the delivery log filtered by state
-- (src/webhooks/deliveries.ts ONE_STATE_DELIVERIES). Without it PostgreSQL answered such a page by walking
-- outbox_pkey (or outbox_instance) backwards and skipping the instance's rows of other states, and every other
-- instance's rows: 3.9 ms for a page of 51 delivered rows of an instance holding 3,000 of 82,000 rows here, and a
-- state the instance rarely has walked its whole 7 days. With it, a page is one range (0.1 ms). `state` is
-- already in the predicates of outbox_pending and outbox_finished_age, so a state change was never a HOT update:
-- it now writes one more index entry.
CREATE INDEX IF NOT EXISTS outbox_instance_state ON outbox (instance_id, state, id);
