-- IRIS approvals: per-item preconditions on the approval row, for PostgreSQL (issue 3
-- staleness; DESIGN §2 "approval row", §6). Same column and rule as
-- migrations/sqlite/0003_preconditions.sql.
--
-- `describe(args)` pins, per item, a precondition (opaque JSON the plugin understands; for mail:
-- the message is still in the folder it was in, with the same Message-ID). It is a request term:
-- written with the row and immutable, like the others (0001_core.sql). Rows written before this
-- migration pin none (`[]`).

ALTER TABLE approvals ADD COLUMN preconditions TEXT NOT NULL DEFAULT '[]';

CREATE TRIGGER approvals_immutable_preconditions BEFORE UPDATE OF preconditions ON approvals
FOR EACH ROW
WHEN (NEW.preconditions IS DISTINCT FROM OLD.preconditions)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): preconditions');
