-- What the stack's policies found in a run's plan, and the overrides it ran with:
-- `{"denied": 1, "warned": 2, "overrides": [{"policy": "cap-edge-deletes", "reason": "INC-42: …"}]}`.
-- Null: the stack has no policies (or the run was written by a release without them).
ALTER TABLE sync_runs ADD COLUMN policy jsonb;
