-- Bounded Idempotency-Key storage (`service/idempotency.ts`). A response too large to keep as it
-- was sent is kept as a reference: `object_id` names the object whose current state a replay reads
-- again (`body` is then NULL; the ETag the first request produced stays in `headers`). `bytes` is
-- what the row keeps (body, headers, key), which an account's cap counts; rows kept before this
-- migration are counted by their stored size.
ALTER TABLE idempotency_keys ADD COLUMN object_id text, ADD COLUMN bytes integer NOT NULL DEFAULT 0;
UPDATE idempotency_keys SET bytes = coalesce(pg_column_size(body), 0) + pg_column_size(headers) + octet_length(key) + 64;

-- The claim of migration 010, redefined: the lock first, then the read, each statement with its own
-- snapshot. `p_references`: the caller replays a response kept by reference. A replica from before
-- this migration calls with two arguments during a rolling upgrade, and is told that a key kept by
-- reference is still in progress (409 with Retry-After: 1) rather than replaying an empty body: the
-- client's retry reaches a replica that can answer it.
DROP FUNCTION ep_claim_idempotency_key(text, text);
CREATE FUNCTION ep_claim_idempotency_key(p_account text, p_key text, p_references boolean DEFAULT false)
RETURNS TABLE (claimed boolean, request_hash text, status integer, headers jsonb, body jsonb, object_id text)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtextextended('idem ' || p_account || ' ' || p_key, 18)) THEN
    RETURN QUERY SELECT false, NULL::text, NULL::integer, NULL::jsonb, NULL::jsonb, NULL::text;
    RETURN;
  END IF;
  RETURN QUERY SELECT (p_references OR k.object_id IS NULL), k.request_hash, k.status, k.headers, k.body, k.object_id
    FROM idempotency_keys k
    WHERE k.account_id = p_account AND k.key = p_key AND k.expires_at > now();
  IF NOT FOUND THEN
    RETURN QUERY SELECT true, NULL::text, NULL::integer, NULL::jsonb, NULL::jsonb, NULL::text;
  END IF;
END
$$;
