-- Accounts and API keys. Keys are stored only as SHA-256 hashes.
CREATE TABLE accounts (
  id            text PRIMARY KEY,
  name          text NOT NULL,
  abuse_reports boolean NOT NULL DEFAULT false,
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id         text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  key_hash   text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);

-- Every resource of every kind is one row; the kind descriptions in src/kinds say what `body`
-- holds. Ids are time-ordered, so (account_id, kind, id) is the list order.
CREATE TABLE objects (
  id         text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  kind       text NOT NULL,
  parent_id  text REFERENCES objects (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  body       jsonb NOT NULL,
  UNIQUE (account_id, id)
);
CREATE INDEX objects_by_kind ON objects (account_id, kind, id);
CREATE INDEX objects_by_parent ON objects (parent_id, id);

-- References between objects of one account (failover children, route backends, mutual TLS CAs).
-- The foreign key to (account_id, to_id) makes a reference to another account's object, or to a
-- missing one, impossible, and makes deleting a referenced object fail: across every process.
CREATE TABLE object_refs (
  account_id text NOT NULL,
  from_id    text NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
  field      text NOT NULL,
  to_id      text NOT NULL,
  PRIMARY KEY (from_id, field, to_id),
  FOREIGN KEY (account_id, to_id) REFERENCES objects (account_id, id)
);
CREATE INDEX object_refs_to ON object_refs (to_id);

-- Values that must be unique within a scope (hostports service-wide, a route's match within its
-- edge). The primary key is the invariant; a concurrent duplicate fails with 23505.
CREATE TABLE unique_keys (
  scope     text NOT NULL,
  value     text NOT NULL,
  object_id text NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
  PRIMARY KEY (scope, value)
);
CREATE INDEX unique_keys_object ON unique_keys (object_id);
