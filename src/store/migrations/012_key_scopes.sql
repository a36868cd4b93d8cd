-- Scoped API keys (docs/api.md, "Scopes"): what a key may do. `read` may only read; `write` may
-- also change objects, take stack locks and record or request syncs; `admin` is a superset of
-- `write` reserved for admin routes (none in the API today). Existing keys keep what they had: write.

ALTER TABLE api_keys ADD COLUMN scope text NOT NULL DEFAULT 'write' CHECK (scope IN ('read', 'write', 'admin'));
