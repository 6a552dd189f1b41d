-- IRIS approvals: approving some of a card's items, or an edited call, for PostgreSQL
-- (docs/adr/0122-shaping-a-call.md). Same rule as migrations/sqlite/0033_decided_call.sql.
--
-- * `approved_items` (JSON array of indices into `items`, ascending), `decided_args` (JSON),
--   `decided_args_canonical` (RFC 8785 text) and `decided_call_hash`: the call an approval of
--   some items, or of an edited call, runs instead of the request's; `edited_fields` (JSON array
--   of the argument names the owner changed) and `decided_items` (JSON array: the edited call's
--   items) for an edit. They are terms of the decision: written together, in the decision's own
--   update, only on `approved`, and never changed after. NULL for a full approval, a rejection,
--   a lapse and a card not answered yet.
-- * A claim must name the call that runs: the decided call where there is one, else the
--   request's (replaces 0001's `iris_ledger_claim_matches_approval`).
ALTER TABLE approvals ADD COLUMN approved_items TEXT;
ALTER TABLE approvals ADD COLUMN decided_args TEXT;
ALTER TABLE approvals ADD COLUMN decided_args_canonical TEXT COLLATE "C";
ALTER TABLE approvals ADD COLUMN decided_call_hash TEXT;
ALTER TABLE approvals ADD COLUMN edited_fields TEXT;
ALTER TABLE approvals ADD COLUMN decided_items TEXT;

CREATE TRIGGER approvals_insert_undecided_call BEFORE INSERT ON approvals FOR EACH ROW
WHEN (NEW.approved_items IS NOT NULL OR NEW.decided_args IS NOT NULL
  OR NEW.decided_args_canonical IS NOT NULL OR NEW.decided_call_hash IS NOT NULL
  OR NEW.edited_fields IS NOT NULL OR NEW.decided_items IS NOT NULL)
EXECUTE FUNCTION iris_refuse('a new approval row has no decided call: it is a term of the decision (docs/adr/0122-shaping-a-call.md)');

CREATE TRIGGER approvals_decided_call_with_approval BEFORE UPDATE ON approvals FOR EACH ROW
WHEN ((NEW.approved_items IS DISTINCT FROM OLD.approved_items
       OR NEW.decided_args IS DISTINCT FROM OLD.decided_args
       OR NEW.decided_args_canonical IS DISTINCT FROM OLD.decided_args_canonical
       OR NEW.decided_call_hash IS DISTINCT FROM OLD.decided_call_hash
       OR NEW.edited_fields IS DISTINCT FROM OLD.edited_fields
       OR NEW.decided_items IS DISTINCT FROM OLD.decided_items)
  AND (OLD.status IS DISTINCT FROM 'pending' OR NEW.status IS DISTINCT FROM 'approved'
       OR NEW.decided_args IS NULL OR NEW.decided_args_canonical IS NULL
       OR NEW.decided_call_hash IS NULL
       OR (NEW.approved_items IS NULL AND NEW.edited_fields IS NULL)
       OR ((NEW.edited_fields IS NULL) <> (NEW.decided_items IS NULL))))
EXECUTE FUNCTION iris_refuse('a decided call is written once, whole, with the approval that chose it (docs/adr/0122-shaping-a-call.md)');

CREATE OR REPLACE FUNCTION iris_ledger_claim_matches_approval() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state IS DISTINCT FROM 'executing' OR NOT EXISTS (
        SELECT 1 FROM approvals a
        WHERE a.id = NEW.approval_id
          AND a.status = 'approved'
          AND a.tool = NEW.tool
          AND COALESCE(a.decided_args_canonical, a.args_canonical) = NEW.args_canonical) THEN
        RAISE EXCEPTION USING
            MESSAGE = 'a claim needs an approved row naming this tool and exactly these arguments (DESIGN §2 claim)',
            ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;
