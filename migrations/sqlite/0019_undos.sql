-- IRIS approvals: the undo from the card, for SQLite (DESIGN §9 "Undo from the card"; the
-- approvals service's `undo` in crates/core/src/approvals/undo.rs). Same rules as
-- migrations/postgres/0019_undos.sql.
--
-- One undo per approval, written `running` before the undo tool runs (write-ahead, like the
-- side-effect ledger) and `done` / `failed` after it; `unknown` when its server stopped or it
-- overran `lease_until` without an outcome. Its primary key makes "once, whatever the taps".
CREATE TABLE undos (
    approval_id    TEXT PRIMARY KEY NOT NULL REFERENCES approvals (id),
    tool           TEXT NOT NULL,
    args_canonical TEXT NOT NULL,
    items          TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('running', 'done', 'failed', 'unknown')),
    actor          TEXT NOT NULL,
    surface        TEXT NOT NULL,
    started_at     TEXT NOT NULL,
    lease_until    TEXT NOT NULL,
    finished_at    TEXT,
    result         TEXT
);

CREATE INDEX undos_running ON undos (state, lease_until);

-- An undo exists only for an approved row whose pinned call executed.
CREATE TRIGGER undos_for_executed BEFORE INSERT ON undos
WHEN NEW.state IS NOT 'running' OR NOT EXISTS (
    SELECT 1 FROM approvals a JOIN ledger l ON l.approval_id = a.id
    WHERE a.id = NEW.approval_id AND a.status = 'approved' AND l.state = 'executed')
BEGIN SELECT RAISE(ABORT, 'an undo needs an approved row whose pinned call executed (DESIGN §9 undo from the card)'); END;

CREATE TRIGGER undos_terms_immutable BEFORE UPDATE ON undos
WHEN NEW.approval_id IS NOT OLD.approval_id
  OR NEW.tool IS NOT OLD.tool
  OR NEW.args_canonical IS NOT OLD.args_canonical
  OR NEW.items IS NOT OLD.items
  OR NEW.actor IS NOT OLD.actor
  OR NEW.surface IS NOT OLD.surface
  OR NEW.started_at IS NOT OLD.started_at
BEGIN SELECT RAISE(ABORT, 'an undo''s terms are immutable (DESIGN §9 undo from the card)'); END;

CREATE TRIGGER undos_outcome_written_once BEFORE UPDATE ON undos
WHEN OLD.state IS NOT 'running' AND (
       NEW.state IS NOT OLD.state
    OR NEW.result IS NOT OLD.result
    OR NEW.finished_at IS NOT OLD.finished_at)
BEGIN SELECT RAISE(ABORT, 'an undo runs once: its outcome is written once (DESIGN §9 undo from the card)'); END;

CREATE TRIGGER undos_no_delete BEFORE DELETE ON undos
BEGIN SELECT RAISE(ABORT, 'undos are never deleted (DESIGN §8: nothing is lost)'); END;

-- The audit log gains the kind `undo`. SQLite cannot change a CHECK in place, so the table is
-- copied with every entry and its id (DROP TABLE fires no trigger; the append-only triggers are
-- made again on the new table).
CREATE TABLE audit_log_v19 (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    approval_id    TEXT NOT NULL,
    kind           TEXT NOT NULL CHECK (kind IN ('decision', 'execution', 'denial', 'lapse', 'undo')),
    item           TEXT,
    result         TEXT NOT NULL,
    undo_available INTEGER NOT NULL CHECK (undo_available IN (0, 1)),
    actor          TEXT NOT NULL,
    surface        TEXT,
    at             TEXT NOT NULL
);
INSERT INTO audit_log_v19 (id, approval_id, kind, item, result, undo_available, actor, surface, at)
SELECT id, approval_id, kind, item, result, undo_available, actor, surface, at FROM audit_log;
DROP TABLE audit_log;
ALTER TABLE audit_log_v19 RENAME TO audit_log;

CREATE INDEX audit_log_approval ON audit_log (approval_id, id);

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only (DESIGN §2 audit log): no update'); END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only (DESIGN §2 audit log): no delete'); END;
