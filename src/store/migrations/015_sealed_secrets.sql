-- Sealed secrets (docs/operations.md, "Secrets at rest"). Every write-only field of a stored body
-- is kept as `{"ep_sealed": <key id>, "v": <envelope>}` (src/service/sealing.ts). `sealed_with`
-- lists the key ids a row's sealed values need, kept by the trigger below whoever writes the body:
-- start-up reads which key ids are in use, and rotation which rows still need an old key, without
-- reading every body.
ALTER TABLE objects ADD COLUMN sealed_with text[];

CREATE FUNCTION objects_sealed_with() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.sealed_with := (SELECT array_agg(DISTINCT k ORDER BY k) FROM (
    SELECT x #>> '{}' AS k FROM jsonb_path_query(NEW.body, 'strict $.**.ep_sealed') x) s);
  RETURN NEW;
END
$$;
CREATE TRIGGER objects_sealed_with BEFORE INSERT OR UPDATE OF body ON objects
  FOR EACH ROW EXECUTE FUNCTION objects_sealed_with();

CREATE INDEX objects_sealed ON objects (id) INCLUDE (sealed_with) WHERE sealed_with IS NOT NULL;

-- One row: whether every secret is known to be sealed (`all_sealed`), and the service's
-- fingerprint key (`fingerprint_key`: 32 random bytes, sealed like a secret when a key ring is
-- given; docs/edges.md, "Secret fingerprints"). A service started without a key ring sets
-- all_sealed false: the next start with one seals what was written meanwhile.
CREATE TABLE secrets_state (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  all_sealed boolean NOT NULL DEFAULT false,
  fingerprint_key jsonb
);
INSERT INTO secrets_state DEFAULT VALUES;

-- Sealing or re-wrapping a secret (start-up, `admin secrets rotate`) changes the body and not the
-- response: such a write (it sets edgeplane.secrets_only for itself) keeps the stored view.
CREATE OR REPLACE FUNCTION objects_view_follows_body() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.view IS NOT DISTINCT FROM OLD.view AND NEW.view_for IS NOT DISTINCT FROM OLD.view_for
     AND current_setting('edgeplane.secrets_only', true) IS DISTINCT FROM 'on' THEN
    NEW.view := NULL;
    NEW.view_for := NULL;
  END IF;
  RETURN NEW;
END
$$;

-- Stack-limited API keys (docs/api.md, "Scopes"): a key with `stacks` may write only objects whose
-- ownership marker names one of them, and take only their locks. NULL: every stack.
ALTER TABLE api_keys ADD COLUMN stacks text[] CHECK (stacks IS NULL OR cardinality(stacks) > 0);
