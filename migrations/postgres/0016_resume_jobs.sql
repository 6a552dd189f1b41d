-- IRIS approvals: the durable resume queue, for PostgreSQL (DESIGN §9; the approvals service in
-- crates/core/src/approvals). Same rules as migrations/sqlite/0016_resume_jobs.sql, plus the
-- event log that carries events across servers.
--
-- A decided row (approved, rejected, expired) is a job: the paused run must resume exactly once.
-- Any server claims a job under a lease (`FOR UPDATE SKIP LOCKED`): `lease_owner` (the server),
-- `lease_epoch` (incremented by every claim; every write under the lease is fenced by it) and
-- `lease_until` (compared with the database's clock). A job whose lease lapsed is claimable
-- again (its holder died). States: `ready`, `running`, `done`, `failed` (the owner may retry),
-- `dead` (the run can never resume).
CREATE TABLE resume_jobs (
    approval_id TEXT COLLATE "C" PRIMARY KEY NOT NULL REFERENCES approvals (id),
    state       TEXT NOT NULL CONSTRAINT resume_jobs_state_check
                CHECK (state IN ('ready', 'running', 'done', 'failed', 'dead')),
    lease_owner TEXT,
    lease_epoch BIGINT NOT NULL DEFAULT 0,
    -- The state the last claim took the job from (`ready`, `running`: a takeover, `failed`: a
    -- retry), written by the claim itself.
    claimed_from TEXT,
    lease_until TEXT COLLATE "C",
    created_at  TEXT COLLATE "C" NOT NULL,
    updated_at  TEXT COLLATE "C" NOT NULL
);

CREATE INDEX resume_jobs_claimable ON resume_jobs (state, lease_until, created_at);

CREATE FUNCTION iris_resume_jobs_rules() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION USING MESSAGE = 'resume jobs are never deleted (DESIGN §8: nothing is lost)',
            ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF (SELECT status FROM approvals WHERE id = NEW.approval_id) NOT IN ('approved', 'rejected', 'expired') THEN
            RAISE EXCEPTION USING MESSAGE = 'a resume job exists only for a decided approval (DESIGN §3 step 6)',
                ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END IF;
    IF NEW.lease_epoch < OLD.lease_epoch THEN
        RAISE EXCEPTION USING MESSAGE = 'a resume job''s lease epoch only grows (DESIGN §9 fencing)',
            ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF OLD.state = 'done' AND NEW.state <> 'done' THEN
        RAISE EXCEPTION USING MESSAGE = 'a paused run resumes exactly once (DESIGN §3 step 6)',
            ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER resume_jobs_rules BEFORE INSERT OR UPDATE OR DELETE ON resume_jobs
FOR EACH ROW EXECUTE FUNCTION iris_resume_jobs_rules();
CREATE TRIGGER resume_jobs_no_truncate BEFORE TRUNCATE ON resume_jobs
FOR EACH STATEMENT EXECUTE FUNCTION iris_refuse('resume jobs are never deleted (DESIGN §8: nothing is lost)');

-- An upgrade in place: the same mapping as on SQLite.
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

UPDATE ledger SET state = 'unknown' WHERE state = 'executing';

-- Events across servers (DESIGN §9): every phase's commit appends its events here and sends
-- `NOTIFY iris_events` as a wake-up; each server's listener reads what is new by `seq` (and
-- again after any reconnect, so nothing in a gap is missed). Writers take a transaction-level
-- advisory lock before appending, so `seq` order is commit order. Old events are deleted by the
-- sweeps after an hour.
CREATE TABLE events (
    seq     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payload TEXT NOT NULL,
    at      TEXT COLLATE "C" NOT NULL
);

CREATE INDEX events_at ON events (at);

-- A unit of work's assertion, as on SQLite (migrations/sqlite/0016_resume_jobs.sql). PostgreSQL
-- runs a unit's statements one by one and checks a compare-and-set's `RETURNING` instead, so this
-- table is here for the schemas to match; it never holds a row.
CREATE TABLE unit_assertions (
    failed TEXT CONSTRAINT iris_unit_assertion CHECK (failed IS NULL)
);
