-- IRIS approvals: the owner's reason for a rejection, given after the tap, for SQLite
-- (docs/adr/0125-reason-after-reject.md). Same rule as
-- migrations/postgres/0035_reason_after_reject.sql.
--
-- The response is still written once, with one exception: a rejected row without a reason
-- may be given one, once (NULL to text). Nothing else of the response moves, and a reason
-- never changes or goes away.
DROP TRIGGER approvals_response_written_once;

CREATE TRIGGER approvals_response_written_once BEFORE UPDATE ON approvals
WHEN OLD.status IS NOT 'pending' AND (
       NEW.status IS NOT OLD.status
    OR NEW.responded_at IS NOT OLD.responded_at
    OR NEW.responded_by IS NOT OLD.responded_by
    OR NEW.surface IS NOT OLD.surface
    OR (NEW.reason IS NOT OLD.reason
        AND NOT (OLD.status IS 'rejected' AND OLD.reason IS NULL AND NEW.reason IS NOT NULL)))
BEGIN SELECT RAISE(ABORT, 'an approval response is written once (DESIGN §2; a rejection may be given its reason once, docs/adr/0125-reason-after-reject.md)'); END;
