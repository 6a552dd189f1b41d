-- IRIS approvals: an agent's cards belong to its device id, for PostgreSQL (DESIGN §2 "device,
-- scope"; docs/liveness.md "revoked devices"). Same rule as
-- migrations/sqlite/0025_requested_by_device.sql.
--
-- * `approvals.requested_by_device`: the device (by id) that requested the call through the
--   gateway; `requested_by` keeps its name for display. A device paired later under the same
--   name is another device: it never reads, attaches to or inherits these rows.
-- * A card whose requesting device is revoked can never be approved: every decision's unit reads
--   the revocation with the row and rejects it instead ("requested by a revoked device").
-- * Rows written before this migration belong to the newest device of their name.
ALTER TABLE approvals ADD COLUMN requested_by_device BIGINT REFERENCES devices (id);

UPDATE approvals a SET requested_by_device =
    (SELECT MAX(d.id) FROM devices d WHERE d.name = a.requested_by)
WHERE a.requested_by IS NOT NULL;

CREATE TRIGGER approvals_immutable_requested_by_device
BEFORE UPDATE OF requested_by_device ON approvals FOR EACH ROW
WHEN (NEW.requested_by_device IS DISTINCT FROM OLD.requested_by_device)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): requested_by_device');

CREATE INDEX approvals_requested_by_device ON approvals (requested_by_device, status)
    WHERE requested_by_device IS NOT NULL;
