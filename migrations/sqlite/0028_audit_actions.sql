-- IRIS approvals: writes the owner asked for without a card are audited too, for SQLite
-- (docs/liveness.md "writes without a card"). Same rule as
-- migrations/postgres/0028_audit_actions.sql.
--
-- * `audit_log.approval_id` may be NULL for an entry of kind `action`: a write that runs
--   without a card because the manifest lets it (`confirm: never` with `reply_undo`, e.g. mail's
--   `trash_category`), named by its `run_id` instead. Every other entry still names its row.
-- * SQLite cannot drop a NOT NULL or change a CHECK in place, so the table is copied with every
--   entry and its id (DROP TABLE fires no trigger; the append-only triggers are made again).
CREATE TABLE audit_log_v28 (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    approval_id    TEXT,
    run_id         TEXT,
    kind           TEXT NOT NULL
                   CHECK (kind IN ('decision', 'execution', 'denial', 'lapse', 'undo', 'action')),
    item           TEXT,
    result         TEXT NOT NULL,
    undo_available INTEGER NOT NULL CHECK (undo_available IN (0, 1)),
    actor          TEXT NOT NULL,
    surface        TEXT,
    at             TEXT NOT NULL,
    CHECK ((kind = 'action' AND run_id IS NOT NULL) OR (kind <> 'action' AND approval_id IS NOT NULL))
);
INSERT INTO audit_log_v28 (id, approval_id, kind, item, result, undo_available, actor, surface, at)
SELECT id, approval_id, kind, item, result, undo_available, actor, surface, at FROM audit_log;
DROP TABLE audit_log;
ALTER TABLE audit_log_v28 RENAME TO audit_log;

CREATE INDEX audit_log_approval ON audit_log (approval_id, id);
CREATE INDEX audit_log_kind ON audit_log (kind, id);

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only (DESIGN §2 audit log): no update'); END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only (DESIGN §2 audit log): no delete'); END;
