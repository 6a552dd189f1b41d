-- IRIS approvals: when a running resume job's lease was taken, for SQLite (docs/liveness.md
-- "who holds a running job"). Same rule as migrations/postgres/0026_job_claimed_at.sql.
--
-- * `resume_jobs.claimed_at`: written by every claim (a first run, a takeover, a retry) with the
--   store's time; with `lease_owner` it says which server runs the job and since when, on the
--   card and in `iris approvals show`. Heartbeats leave it alone (they move `updated_at`).
-- * Jobs claimed before this migration have none; they show their holder without a time.
ALTER TABLE resume_jobs ADD COLUMN claimed_at TEXT;
