-- A version per object, raised by every write of the object, of its modules, and of the children
-- its responses embed (a route's write raises its edge's): the service's ETag, which `If-Match`
-- compares with under the row lock.
ALTER TABLE objects ADD COLUMN version bigint NOT NULL DEFAULT 1;

-- Responses kept for `Idempotency-Key` (24 h, per account). A row is written in the transaction of
-- the request it answers: committed with the object it made, or not at all.
CREATE TABLE idempotency_keys (
  account_id   text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  key          text NOT NULL,
  request_hash text NOT NULL,
  status       integer NOT NULL,
  headers      jsonb NOT NULL,
  body         jsonb,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

-- Stack locks: at most one row per (account, stack). An expired row is deleted by whoever takes the
-- stack next, in the transaction that inserts its own: the primary key decides between replicas.
CREATE TABLE stack_locks (
  id         text COLLATE "C" NOT NULL UNIQUE,
  account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  stack      text NOT NULL,
  holder     text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (account_id, stack)
);
CREATE INDEX stack_locks_by_id ON stack_locks (account_id, id);
