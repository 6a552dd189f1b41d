-- IRIS approvals: an evaluator halt is never claimed, for PostgreSQL (issue 3; DESIGN §2
-- "kind", "claim"). Same rule as migrations/sqlite/0004_evaluator_claims.sql.
--
-- A row of kind `evaluator` pins no call to execute: the step it reviews already ran, and
-- approving it only lets the run continue. So its row is never claimed in the side-effect
-- ledger, whatever tool and arguments it names (the store's claim statement says the same).
-- A trigger's WHEN cannot hold a subquery in PostgreSQL, so the rule has a function of its own.

CREATE FUNCTION iris_ledger_claim_not_evaluator() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM approvals a
               WHERE a.id = NEW.approval_id AND a.kind = 'evaluator') THEN
        RAISE EXCEPTION USING
            MESSAGE = 'an evaluator halt pins no call to execute and is never claimed (DESIGN §2 kind)',
            ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER ledger_claim_not_evaluator BEFORE INSERT ON ledger FOR EACH ROW
EXECUTE FUNCTION iris_ledger_claim_not_evaluator();
