-- IRIS approvals: the owner's reason for a rejection, given after the tap, for PostgreSQL
-- (docs/adr/0125-reason-after-reject.md). Same rule as
-- migrations/sqlite/0035_reason_after_reject.sql.
--
-- The response is still written once, with one exception: a rejected row without a reason
-- may be given one, once (NULL to text). Nothing else of the response moves, and a reason
-- never changes or goes away.
DROP TRIGGER approvals_response_written_once ON approvals;

CREATE TRIGGER approvals_response_written_once BEFORE UPDATE ON approvals FOR EACH ROW
WHEN (OLD.status IS DISTINCT FROM 'pending' AND (
       NEW.status IS DISTINCT FROM OLD.status
    OR NEW.responded_at IS DISTINCT FROM OLD.responded_at
    OR NEW.responded_by IS DISTINCT FROM OLD.responded_by
    OR NEW.surface IS DISTINCT FROM OLD.surface
    OR (NEW.reason IS DISTINCT FROM OLD.reason
        AND NOT (OLD.status = 'rejected' AND OLD.reason IS NULL AND NEW.reason IS NOT NULL))))
EXECUTE FUNCTION iris_refuse('an approval response is written once (DESIGN §2; a rejection may be given its reason once, docs/adr/0125-reason-after-reject.md)');
