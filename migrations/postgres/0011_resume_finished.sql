-- IRIS approvals: resumes interrupted by a crash are found and continued once, for PostgreSQL
-- (issue 3, side-effect ledger; DESIGN §8 "a resume after a crash picks up from the ledger").
-- Same rule as migrations/sqlite/0011_resume_finished.sql.
--
-- `finished_at`: when the resumed run ended (done, refused, or failed with its resume error
-- recorded). A checkpoint taken for resuming (`resumed_at`) whose run has not finished was
-- interrupted by a crash; at start-up the server continues it once more from the ledger (the
-- pinned call itself never runs again). `recoveries` counts those continuations; taking one is a
-- compare-and-set on it, so two servers starting at once continue a run only once.
ALTER TABLE checkpoints ADD COLUMN finished_at TEXT COLLATE "C";
ALTER TABLE checkpoints ADD COLUMN recoveries BIGINT NOT NULL DEFAULT 0;

-- Runs resumed before this migration are taken as finished.
UPDATE checkpoints SET finished_at = resumed_at WHERE resumed_at IS NOT NULL;
