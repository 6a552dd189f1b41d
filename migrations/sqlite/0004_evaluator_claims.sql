-- IRIS approvals: an evaluator halt is never claimed, for SQLite (issue 3; DESIGN §2 "kind",
-- "claim"). Same rule as migrations/postgres/0004_evaluator_claims.sql.
--
-- A row of kind `evaluator` pins no call to execute: the step it reviews already ran, and
-- approving it only lets the run continue. So its row is never claimed in the side-effect
-- ledger, whatever tool and arguments it names (the store's claim statement says the same).

CREATE TRIGGER ledger_claim_not_evaluator BEFORE INSERT ON ledger
WHEN EXISTS (SELECT 1 FROM approvals a WHERE a.id = NEW.approval_id AND a.kind = 'evaluator')
BEGIN SELECT RAISE(ABORT, 'an evaluator halt pins no call to execute and is never claimed (DESIGN §2 kind)'); END;
