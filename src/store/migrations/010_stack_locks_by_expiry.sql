-- Expired stack locks, oldest first: what `sweepStackLocks` deletes on each take, so locks left to
-- expire (killed applies, clients that never release) do not pile up.
CREATE INDEX stack_locks_by_expiry ON stack_locks (expires_at);

-- An Idempotency-Key claimed and its kept response read in one round trip (`claimKey`): the
-- advisory lock first, then the read. Each statement of a VOLATILE function takes its own snapshot,
-- so the read sees a response committed by the request that held the key until just now.
CREATE FUNCTION ep_claim_idempotency_key(p_account text, p_key text)
RETURNS TABLE (claimed boolean, request_hash text, status integer, headers jsonb, body jsonb)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtextextended('idem ' || p_account || ' ' || p_key, 18)) THEN
    RETURN QUERY SELECT false, NULL::text, NULL::integer, NULL::jsonb, NULL::jsonb;
    RETURN;
  END IF;
  RETURN QUERY SELECT true, k.request_hash, k.status, k.headers, k.body FROM idempotency_keys k
    WHERE k.account_id = p_account AND k.key = p_key AND k.expires_at > now();
  IF NOT FOUND THEN
    RETURN QUERY SELECT true, NULL::text, NULL::integer, NULL::jsonb, NULL::jsonb;
  END IF;
END
$$;
