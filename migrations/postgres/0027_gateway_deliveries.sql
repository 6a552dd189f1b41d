-- IRIS approvals: when a gateway call's result was first given to its agent, for PostgreSQL
-- (docs/liveness.md "gateway writes"). Same rule as
-- migrations/sqlite/0027_gateway_deliveries.sql.
--
-- * One row per executed gateway card, written the first time the requesting agent is given
--   the call's result (a held call, or the first repeat after it ran). Every later repeat of the
--   same call is told `executed_before`, with when it ran and how to ask again: never the old
--   result presented as new.
-- * Never updated or deleted: the first delivery stays the first.
CREATE TABLE gateway_deliveries (
    approval_id  TEXT COLLATE "C" PRIMARY KEY NOT NULL REFERENCES approvals (id),
    delivered_at TEXT COLLATE "C" NOT NULL
);

CREATE TRIGGER gateway_deliveries_no_update BEFORE UPDATE ON gateway_deliveries FOR EACH ROW
EXECUTE FUNCTION iris_refuse('a gateway result is first delivered once (docs/liveness.md)');

CREATE TRIGGER gateway_deliveries_no_delete BEFORE DELETE ON gateway_deliveries FOR EACH ROW
EXECUTE FUNCTION iris_refuse('gateway deliveries are never deleted (DESIGN §8: nothing is lost)');

CREATE TRIGGER gateway_deliveries_no_truncate BEFORE TRUNCATE ON gateway_deliveries
FOR EACH STATEMENT
EXECUTE FUNCTION iris_refuse('gateway deliveries are never deleted (DESIGN §8: nothing is lost)');
