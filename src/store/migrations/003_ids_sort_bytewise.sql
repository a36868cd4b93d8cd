-- Ids sort by creation only when compared byte by byte: lists are ordered by id, and `before_id`
-- pages by it. A database created with a linguistic default collation (en-US, ICU or libc) sorts
-- "n79…" before "n114…" by letters and case instead, so lists came out of order and `before_id`
-- skipped or repeated objects. Every column holding an object id compares in "C" (the indexes on
-- them are rebuilt); on a database whose default is already C this changes no order.
ALTER TABLE objects ALTER COLUMN id TYPE text COLLATE "C";
ALTER TABLE objects ALTER COLUMN parent_id TYPE text COLLATE "C";
ALTER TABLE object_refs ALTER COLUMN from_id TYPE text COLLATE "C";
ALTER TABLE object_refs ALTER COLUMN to_id TYPE text COLLATE "C";
ALTER TABLE unique_keys ALTER COLUMN object_id TYPE text COLLATE "C";
ALTER TABLE jobs ALTER COLUMN id TYPE text COLLATE "C";
ALTER TABLE jobs ALTER COLUMN object_id TYPE text COLLATE "C";
