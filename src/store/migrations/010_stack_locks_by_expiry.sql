-- Expired stack locks, oldest first: what `sweepStackLocks` deletes on each take, so locks left to
-- expire (killed applies, clients that never release) do not pile up.
CREATE INDEX stack_locks_by_expiry ON stack_locks (expires_at);
