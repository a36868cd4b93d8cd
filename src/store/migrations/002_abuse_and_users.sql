-- Background jobs (abuse report processing), shared by every service process on the database.
-- A worker claims ready jobs with FOR UPDATE SKIP LOCKED, taking a lease: `lease_token` names the
-- claim, `lease_until` is when another worker may take the job over (its holder died). A job is
-- finished only by the holder of the current token, in the transaction that commits its effect.
CREATE TABLE jobs (
  id          text PRIMARY KEY,
  type        text NOT NULL,
  object_id   text NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
  state       text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done')),
  run_after   timestamptz NOT NULL DEFAULT now(),
  lease_token text,
  lease_until timestamptz,
  claimed_by  text,
  -- How often the job was claimed, and how often its effect was committed (must end at 1).
  attempts    integer NOT NULL DEFAULT 0,
  completions integer NOT NULL DEFAULT 0,
  last_error  text,
  finished_by text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);
CREATE INDEX jobs_ready ON jobs (run_after, id) WHERE state = 'queued';
CREATE INDEX jobs_leased ON jobs (lease_until) WHERE state = 'running';
CREATE INDEX jobs_object ON jobs (object_id);

-- Hostnames an operator banned through an abuse report: no edge may add them to its hostports.
-- One row per hostname, service-wide; an unban deletes it.
CREATE TABLE hostname_bans (
  hostname   text PRIMARY KEY,
  report_id  text NOT NULL,
  banned_at  timestamptz NOT NULL DEFAULT now()
);

-- Operator listing of abuse reports across accounts, by status.
CREATE INDEX objects_abuse_status ON objects ((body ->> 'status'), id) WHERE kind = 'abuseReport';
