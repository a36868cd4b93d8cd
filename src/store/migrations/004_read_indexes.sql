-- Reads that do not depend on planner statistics. A table never analysed (a fresh database, a
-- bulk load, autovacuum off) gives the planner no idea how many rows an account holds; it costs
-- every candidate index alike and keeps the first. `objects_by_kind` then served the lookup of an
-- edge's routes too, reading every route of the account and filtering them by parent.
--
-- Top-level objects and children now have an index each, with predicates that exclude each other:
-- a lookup of children by parent (`parent_id = …` implies NOT NULL) can only take
-- `objects_children`, which answers it in creation order and reads nothing else; a list of a
-- top-level kind (`parent_id IS NULL`, see store/objects.ts) takes `objects_by_kind`.
DROP INDEX objects_by_kind;
CREATE INDEX objects_by_kind ON objects (account_id, kind, id) WHERE parent_id IS NULL;
CREATE INDEX objects_children ON objects (account_id, kind, parent_id, id) WHERE parent_id IS NOT NULL;
