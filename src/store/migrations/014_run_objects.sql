-- The objects a run's plan changed (or, for a drift check, found changed), each with the fields
-- that differ: `[{"identity": "HTTPSEdge/web", "action": "update", "fields": ["description"]}]`.
-- The status page marks a stack's drifted objects with them. Bounded by the writer's schema.
ALTER TABLE sync_runs ADD COLUMN objects jsonb;
