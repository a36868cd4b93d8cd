-- A keyed write's kept response without the foreign key to its account (`service/idempotency.ts`):
-- the key is inserted in the transaction of a request its account's API key authenticated, and
-- the constraint's check (a lookup of the account row and a lock on it, per insert) was about a
-- third of the insert's cost. Deleting an account still deletes its keys (the trigger below, as
-- ON DELETE CASCADE did); a key written in the instant an account is deleted is an orphan no one
-- can read, swept within 24 hours with the other expired keys.
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_account_id_fkey;

CREATE FUNCTION ep_delete_account_idempotency_keys() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM idempotency_keys WHERE account_id = OLD.id;
  RETURN OLD;
END
$$;
CREATE TRIGGER accounts_delete_idempotency_keys AFTER DELETE ON accounts
  FOR EACH ROW EXECUTE FUNCTION ep_delete_account_idempotency_keys();
