-- The record of syncs (docs/api.md, "Sync record"): every apply of a stack, by the sync agent or
-- by the CLI, is one run; each stack the account has run or asked to sync has one row of summary.

CREATE TABLE sync_runs (
  id             text COLLATE "C" NOT NULL,
  account_id     text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  stack          text NOT NULL,
  commit_sha     text,
  commit_subject text,
  commit_author  text,
  trigger        text NOT NULL,
  holder         text NOT NULL,
  started_at     timestamptz NOT NULL,
  finished_at    timestamptz NOT NULL DEFAULT now(),
  outcome        text NOT NULL,
  counts         jsonb NOT NULL,
  drift_count    integer,
  error          text,
  plan_markdown  text,
  PRIMARY KEY (account_id, id)
);
-- A stack's runs newest first (its history, and the retention cap's trim).
CREATE INDEX sync_runs_by_stack ON sync_runs (account_id, stack, id);

CREATE TABLE sync_stacks (
  account_id        text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  stack             text COLLATE "C" NOT NULL,
  live_sha          text,
  live_subject      text,
  live_author       text,
  live_since        timestamptz,
  last_run_id       text COLLATE "C",
  status            text NOT NULL DEFAULT 'unknown',
  drift_count       integer,
  sync_requested_at timestamptz,
  sync_requested_by text,
  PRIMARY KEY (account_id, stack)
);
