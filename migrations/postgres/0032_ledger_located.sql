-- IRIS approvals: where an unknown call's items are, for PostgreSQL (docs/liveness.md
-- "truthful records"). Same rule as migrations/sqlite/0032_ledger_located.sql.
--
-- * `ledger.located`: after a takeover marks a call `unknown` (its server stopped while it
--   ran), the tool's plugin says where each item is now (a file at its path or in quarantine),
--   as JSON (core `wire::Located`). It sits beside the outcome and never changes it: the
--   entry stays `unknown` and its `result` as written. NULL until then.
-- * Written once, and only on an `unknown` entry.
ALTER TABLE ledger ADD COLUMN located TEXT;

CREATE TRIGGER ledger_located_once BEFORE UPDATE ON ledger FOR EACH ROW
WHEN (NEW.located IS DISTINCT FROM OLD.located
  AND (OLD.located IS NOT NULL OR OLD.state IS DISTINCT FROM 'unknown'
       OR NEW.state IS DISTINCT FROM 'unknown'))
EXECUTE FUNCTION iris_refuse('where an unknown call''s items are is written once, on an unknown entry only (docs/liveness.md "truthful records")');

-- * An undo from the card exists only for an approved row whose pinned call executed, or whose
--   call is `unknown` and whose plugin found items it can put back (`located.undo_action`):
--   the undo then restores those only (docs/liveness.md "truthful records").
CREATE OR REPLACE FUNCTION iris_undos_for_executed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state IS DISTINCT FROM 'running' OR NOT EXISTS (
        SELECT 1 FROM approvals a JOIN ledger l ON l.approval_id = a.id
        WHERE a.id = NEW.approval_id AND a.status = 'approved'
          AND (l.state = 'executed'
               OR (l.state = 'unknown' AND (l.located::jsonb ->> 'undo_action') IS NOT NULL))) THEN
        RAISE EXCEPTION USING
            MESSAGE = 'an undo needs an approved row whose pinned call executed, or an unknown one whose items were found (DESIGN §9 undo from the card)',
            ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;
