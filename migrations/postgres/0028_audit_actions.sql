-- IRIS approvals: writes the owner asked for without a card are audited too, for PostgreSQL
-- (docs/liveness.md "writes without a card"). Same rule as
-- migrations/sqlite/0028_audit_actions.sql.
--
-- * `audit_log.approval_id` may be NULL for an entry of kind `action`: a write that runs
--   without a card because the manifest lets it (`confirm: never` with `reply_undo`, e.g. mail's
--   `trash_category`), named by its `run_id` instead. Every other entry still names its row.
ALTER TABLE audit_log ALTER COLUMN approval_id DROP NOT NULL;
ALTER TABLE audit_log ADD COLUMN run_id TEXT COLLATE "C";
ALTER TABLE audit_log DROP CONSTRAINT audit_log_kind_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_kind_check
    CHECK (kind IN ('decision', 'execution', 'denial', 'lapse', 'undo', 'action'));
ALTER TABLE audit_log ADD CONSTRAINT audit_log_names_its_subject
    CHECK ((kind = 'action' AND run_id IS NOT NULL) OR (kind <> 'action' AND approval_id IS NOT NULL));

CREATE INDEX audit_log_kind ON audit_log (kind, id);
