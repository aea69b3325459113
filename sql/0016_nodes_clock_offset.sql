-- 0016: how far each node's clock is from the database's, as the node measured it at its last heartbeat
-- (milliseconds, positive when the node's clock is ahead; null until measured, and for nodes of an earlier
-- version). A node plans its instances' slots, validity and quiet hours on its own clock, and after a hand-over
-- the next owner reads them on its own: the operator API lists every node's offset (GET /admin/v1/nodes). A double,
-- not an integer: an offset of weeks (a clock set wrong, or a test's simulated one) must not fail the heartbeat.
ALTER TABLE nodes ADD COLUMN clock_offset_ms double precision;
