-- IRIS approvals: an agent's cards belong to its device id, for SQLite (DESIGN §2 "device,
-- scope"; docs/liveness.md "revoked devices"). Same rule as
-- migrations/postgres/0025_requested_by_device.sql.
--
-- * `approvals.requested_by_device`: the device (by id) that requested the call through the
--   gateway; `requested_by` keeps its name for display. A device paired later under the same
--   name is another device: it never reads, attaches to or inherits these rows.
-- * A card whose requesting device is revoked can never be approved: every decision's unit reads
--   the revocation with the row and rejects it instead ("requested by a revoked device").
-- * Rows written before this migration belong to the newest device of their name.
ALTER TABLE approvals ADD COLUMN requested_by_device INTEGER REFERENCES devices (id);

UPDATE approvals SET requested_by_device =
    (SELECT MAX(d.id) FROM devices d WHERE d.name = approvals.requested_by)
WHERE requested_by IS NOT NULL;

CREATE TRIGGER approvals_immutable_requested_by_device
BEFORE UPDATE OF requested_by_device ON approvals
WHEN NEW.requested_by_device IS NOT OLD.requested_by_device
BEGIN SELECT RAISE(ABORT, 'approval request terms are immutable (DESIGN §2): requested_by_device'); END;

CREATE INDEX approvals_requested_by_device ON approvals (requested_by_device, status)
    WHERE requested_by_device IS NOT NULL;
