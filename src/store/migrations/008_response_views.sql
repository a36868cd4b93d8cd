-- An object's response as the service last rendered it (`view`, JSON text without embedded
-- children) and what for (`view_for`: the renderer's revision and the base URL of its `uri`s). A
-- GET sends it as it is while both still hold. Rows written before this migration have none: they
-- are answered as before until written.
ALTER TABLE objects ADD COLUMN view text, ADD COLUMN view_for text;

-- A write that changes the body and leaves the view as it was (a release from before this
-- migration, during a rolling upgrade or after a rollback; any write that renders none) clears it:
-- no view outlives the body it was rendered from, whoever wrote the body.
CREATE FUNCTION objects_view_follows_body() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.view IS NOT DISTINCT FROM OLD.view AND NEW.view_for IS NOT DISTINCT FROM OLD.view_for THEN
    NEW.view := NULL;
    NEW.view_for := NULL;
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER objects_view_follows_body BEFORE UPDATE OF body ON objects
  FOR EACH ROW WHEN (NEW.body IS DISTINCT FROM OLD.body) EXECUTE FUNCTION objects_view_follows_body();
