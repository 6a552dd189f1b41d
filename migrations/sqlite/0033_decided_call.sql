-- IRIS approvals: approving some of a card's items, or an edited call, for SQLite
-- (docs/adr/0122-shaping-a-call.md).
-- Same rule as migrations/postgres/0033_decided_call.sql.
--
-- * `approved_items` (JSON array of indices into `items`, ascending), `decided_args` (JSON),
--   `decided_args_canonical` (RFC 8785 text) and `decided_call_hash`: the call an approval of
--   some items, or of an edited call, runs instead of the request's; `edited_fields` (JSON array
--   of the argument names the owner changed) and `decided_items` (JSON array: the edited call's
--   items) for an edit. They are terms of the decision: written together, in the decision's own
--   update, only on `approved`, and never changed after. NULL for a full approval, a rejection,
--   a lapse and a card not answered yet.
-- * A claim must name the call that runs: the decided call where there is one, else the
--   request's (replaces 0001's `ledger_claim_matches_approval`).
ALTER TABLE approvals ADD COLUMN approved_items TEXT;
ALTER TABLE approvals ADD COLUMN decided_args TEXT;
ALTER TABLE approvals ADD COLUMN decided_args_canonical TEXT;
ALTER TABLE approvals ADD COLUMN decided_call_hash TEXT;
ALTER TABLE approvals ADD COLUMN edited_fields TEXT;
ALTER TABLE approvals ADD COLUMN decided_items TEXT;

CREATE TRIGGER approvals_insert_undecided_call BEFORE INSERT ON approvals
WHEN NEW.approved_items IS NOT NULL OR NEW.decided_args IS NOT NULL
  OR NEW.decided_args_canonical IS NOT NULL OR NEW.decided_call_hash IS NOT NULL
  OR NEW.edited_fields IS NOT NULL OR NEW.decided_items IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'a new approval row has no decided call: it is a term of the decision (docs/adr/0122-shaping-a-call.md)'); END;

CREATE TRIGGER approvals_decided_call_with_approval BEFORE UPDATE ON approvals
WHEN (NEW.approved_items IS NOT OLD.approved_items OR NEW.decided_args IS NOT OLD.decided_args
      OR NEW.decided_args_canonical IS NOT OLD.decided_args_canonical
      OR NEW.decided_call_hash IS NOT OLD.decided_call_hash
      OR NEW.edited_fields IS NOT OLD.edited_fields OR NEW.decided_items IS NOT OLD.decided_items)
 AND (OLD.status IS NOT 'pending' OR NEW.status IS NOT 'approved'
      OR NEW.decided_args IS NULL OR NEW.decided_args_canonical IS NULL
      OR NEW.decided_call_hash IS NULL
      OR (NEW.approved_items IS NULL AND NEW.edited_fields IS NULL)
      OR ((NEW.edited_fields IS NULL) <> (NEW.decided_items IS NULL)))
BEGIN SELECT RAISE(ABORT, 'a decided call is written once, whole, with the approval that chose it (docs/adr/0122-shaping-a-call.md)'); END;

DROP TRIGGER ledger_claim_matches_approval;
CREATE TRIGGER ledger_claim_matches_approval BEFORE INSERT ON ledger
WHEN NEW.state IS NOT 'executing' OR NOT EXISTS (
    SELECT 1 FROM approvals a
    WHERE a.id = NEW.approval_id
      AND a.status = 'approved'
      AND a.tool = NEW.tool
      AND COALESCE(a.decided_args_canonical, a.args_canonical) = NEW.args_canonical)
BEGIN SELECT RAISE(ABORT, 'a claim needs an approved row naming this tool and exactly these arguments (DESIGN §2 claim)'); END;
