-- IRIS approvals: the undo from the card, for PostgreSQL (DESIGN §9 "Undo from the card"; the
-- approvals service's `undo` in crates/core/src/approvals/undo.rs). Same rules as
-- migrations/sqlite/0019_undos.sql.
--
-- One undo per approval, written `running` before the undo tool runs (write-ahead, like the
-- side-effect ledger) and `done` / `failed` after it; `unknown` when its server stopped or it
-- overran `lease_until` without an outcome. Its primary key makes "once, whatever the taps".
CREATE TABLE undos (
    approval_id    TEXT COLLATE "C" PRIMARY KEY NOT NULL REFERENCES approvals (id),
    tool           TEXT COLLATE "C" NOT NULL,
    args_canonical TEXT COLLATE "C" NOT NULL,
    items          TEXT NOT NULL,
    state          TEXT NOT NULL CONSTRAINT undos_state_check
                   CHECK (state IN ('running', 'done', 'failed', 'unknown')),
    actor          TEXT NOT NULL,
    surface        TEXT NOT NULL,
    started_at     TEXT COLLATE "C" NOT NULL,
    lease_until    TEXT COLLATE "C" NOT NULL,
    finished_at    TEXT COLLATE "C",
    result         TEXT
);

CREATE INDEX undos_running ON undos (state, lease_until);

-- An undo exists only for an approved row whose pinned call executed.
CREATE FUNCTION iris_undos_for_executed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state IS DISTINCT FROM 'running' OR NOT EXISTS (
        SELECT 1 FROM approvals a JOIN ledger l ON l.approval_id = a.id
        WHERE a.id = NEW.approval_id AND a.status = 'approved' AND l.state = 'executed') THEN
        RAISE EXCEPTION USING
            MESSAGE = 'an undo needs an approved row whose pinned call executed (DESIGN §9 undo from the card)',
            ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER undos_for_executed BEFORE INSERT ON undos FOR EACH ROW
EXECUTE FUNCTION iris_undos_for_executed();

CREATE TRIGGER undos_terms_immutable BEFORE UPDATE ON undos FOR EACH ROW
WHEN (NEW.approval_id IS DISTINCT FROM OLD.approval_id
  OR NEW.tool IS DISTINCT FROM OLD.tool
  OR NEW.args_canonical IS DISTINCT FROM OLD.args_canonical
  OR NEW.items IS DISTINCT FROM OLD.items
  OR NEW.actor IS DISTINCT FROM OLD.actor
  OR NEW.surface IS DISTINCT FROM OLD.surface
  OR NEW.started_at IS DISTINCT FROM OLD.started_at)
EXECUTE FUNCTION iris_refuse('an undo''s terms are immutable (DESIGN §9 undo from the card)');

CREATE TRIGGER undos_outcome_written_once BEFORE UPDATE ON undos FOR EACH ROW
WHEN (OLD.state IS DISTINCT FROM 'running' AND (
       NEW.state IS DISTINCT FROM OLD.state
    OR NEW.result IS DISTINCT FROM OLD.result
    OR NEW.finished_at IS DISTINCT FROM OLD.finished_at))
EXECUTE FUNCTION iris_refuse('an undo runs once: its outcome is written once (DESIGN §9 undo from the card)');

CREATE TRIGGER undos_no_delete BEFORE DELETE ON undos FOR EACH ROW
EXECUTE FUNCTION iris_refuse('undos are never deleted (DESIGN §8: nothing is lost)');

CREATE TRIGGER undos_no_truncate BEFORE TRUNCATE ON undos FOR EACH STATEMENT
EXECUTE FUNCTION iris_refuse('undos are never deleted (DESIGN §8: nothing is lost)');

-- The audit log gains the kind `undo`.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_kind_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_kind_check
    CHECK (kind IN ('decision', 'execution', 'denial', 'lapse', 'undo'));
