-- An object's response as the service last rendered it (`view`, JSON text without embedded
-- children) and what for (`view_for`: the renderer's revision and the base URL of its `uri`s). A
-- GET sends it as it is while both still hold; a write of the body renders it again or clears it.
-- Rows written before this migration have none: they are answered as before until written.
ALTER TABLE objects ADD COLUMN view text, ADD COLUMN view_for text;
