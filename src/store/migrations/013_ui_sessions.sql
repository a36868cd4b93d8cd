-- Sessions of the status page (/ui/): a browser signs in with an API key once and holds a random
-- token in a cookie; only the token's SHA-256 is stored. A session lives while its key is not
-- revoked and until it expires; sign-out deletes the row.
CREATE TABLE ui_sessions (
  token_hash text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  key_id     text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  csrf       text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX ui_sessions_expiry ON ui_sessions (expires_at);
