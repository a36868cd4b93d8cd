-- An account's idempotency keys newest first: what `trimKeys` counts and deletes beyond the
-- account's cap (the oldest go first).
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (account_id, created_at, key);
