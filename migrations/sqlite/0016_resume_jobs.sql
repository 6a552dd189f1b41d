-- IRIS approvals: the durable resume queue, for SQLite (DESIGN §9; the approvals service in
-- crates/core/src/approvals). Same rules as migrations/postgres/0016_resume_jobs.sql.
--
-- A decided row (approved, rejected, expired) is a job: the paused run must resume exactly once.
-- Any server claims a job under a lease: `lease_owner` (the server), `lease_epoch` (incremented by
-- every claim; every write under the lease is fenced by it) and `lease_until` (compared with the
-- store's one time source). A job whose lease lapsed is claimable again (its holder died).
-- States: `ready` (never run), `running` (leased), `done` (the run resumed), `failed` (resuming
-- failed; the owner may retry), `dead` (the run can never resume: no checkpoint, a corrupt one).
CREATE TABLE resume_jobs (
    approval_id TEXT PRIMARY KEY NOT NULL REFERENCES approvals (id),
    state       TEXT NOT NULL CHECK (state IN ('ready', 'running', 'done', 'failed', 'dead')),
    lease_owner TEXT,
    lease_epoch INTEGER NOT NULL DEFAULT 0,
    -- The state the last claim took the job from (`ready`, `running`: a takeover, `failed`: a
    -- retry), written by the claim itself.
    claimed_from TEXT,
    lease_until TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE INDEX resume_jobs_claimable ON resume_jobs (state, lease_until, created_at);

-- A job exists only for a decided row (a pending row has nothing to resume).
CREATE TRIGGER resume_jobs_for_decided BEFORE INSERT ON resume_jobs
WHEN (SELECT status FROM approvals WHERE id = NEW.approval_id) IS NOT 'approved'
 AND (SELECT status FROM approvals WHERE id = NEW.approval_id) IS NOT 'rejected'
 AND (SELECT status FROM approvals WHERE id = NEW.approval_id) IS NOT 'expired'
BEGIN SELECT RAISE(ABORT, 'a resume job exists only for a decided approval (DESIGN §3 step 6)'); END;

-- The epoch only grows: a claim can never reuse an older holder's fence.
CREATE TRIGGER resume_jobs_epoch_grows BEFORE UPDATE OF lease_epoch ON resume_jobs
WHEN NEW.lease_epoch < OLD.lease_epoch
BEGIN SELECT RAISE(ABORT, 'a resume job''s lease epoch only grows (DESIGN §9 fencing)'); END;

-- A resumed run resumed once: a done job stays done.
CREATE TRIGGER resume_jobs_done_once BEFORE UPDATE OF state ON resume_jobs
WHEN OLD.state = 'done' AND NEW.state IS NOT 'done'
BEGIN SELECT RAISE(ABORT, 'a paused run resumes exactly once (DESIGN §3 step 6)'); END;

CREATE TRIGGER resume_jobs_no_delete BEFORE DELETE ON resume_jobs
BEGIN SELECT RAISE(ABORT, 'resume jobs are never deleted (DESIGN §8: nothing is lost)'); END;

-- An upgrade in place: what a database of the earlier schema holds becomes jobs, nothing lost.
-- * decided rows whose run never resumed, or whose resume a stop interrupted: `ready`;
-- * decided rows whose resume failed (a resume error is on the card): `failed`, for a retry;
-- * decided rows whose run resumed and ended: `done`;
-- * decided rows without a checkpoint (their run was never saved): `ready`; the first claim
--   marks them `dead` with the reason on the card.
INSERT INTO resume_jobs (approval_id, state, lease_epoch, created_at, updated_at)
SELECT a.id,
       CASE
           WHEN c.id IS NULL THEN 'ready'
           WHEN a.resume_error IS NOT NULL THEN 'failed'
           WHEN c.resumed_at IS NOT NULL AND c.finished_at IS NOT NULL THEN 'done'
           ELSE 'ready'
       END,
       0,
       COALESCE(a.responded_at, a.created_at),
       COALESCE(a.responded_at, a.created_at)
FROM approvals a LEFT JOIN checkpoints c ON c.approval_id = a.id
WHERE a.status IN ('approved', 'rejected', 'expired');

-- Calls a stop left between `executing` and their outcome: no server runs now, so they may or
-- may not have happened. They become `unknown` and are never run again.
UPDATE ledger SET state = 'unknown' WHERE state = 'executing';

-- A unit of work's assertion (crates/store/src/unit.rs): on SQLite a unit's statements travel in
-- one batch, so a compare-and-set is followed by `INSERT INTO unit_assertions (failed) SELECT …
-- WHERE changes() = 0`; when the compare-and-set changed nothing, that insert breaks this check
-- and the batch stops there: nothing after it is written. The table never holds a row.
CREATE TABLE unit_assertions (
    failed TEXT CONSTRAINT iris_unit_assertion CHECK (failed IS NULL)
);
