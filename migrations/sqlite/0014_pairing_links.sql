-- One-time pairing links (issue 5 "Devices, sessions, scopes"; DESIGN §7 `iris pair`).
-- `iris pair --scope read|control` (or a control device on the Devices page) stores a link whose
-- code is kept only as its hex SHA-256. Opening it pairs one browser as a device with that scope:
-- the redemption sets used_at and device_name in the same transaction that adds the device, so a
-- link pairs at most one device, and never after expires_at (10 minutes after created_at).
CREATE TABLE pairing_links (
    code_hash   TEXT PRIMARY KEY,
    scope       TEXT NOT NULL CHECK (scope IN ('read', 'control')),
    created_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    used_at     TEXT,
    device_name TEXT,
    CHECK (expires_at > created_at),
    CHECK ((used_at IS NULL) = (device_name IS NULL))
);

-- Only the first redemption may be written; the terms of a link never change.
CREATE TRIGGER pairing_links_once BEFORE UPDATE ON pairing_links
WHEN OLD.used_at IS NOT NULL
  OR NEW.code_hash IS NOT OLD.code_hash
  OR NEW.scope IS NOT OLD.scope
  OR NEW.created_by IS NOT OLD.created_by
  OR NEW.created_at IS NOT OLD.created_at
  OR NEW.expires_at IS NOT OLD.expires_at
BEGIN SELECT RAISE(ABORT, 'a pairing link pairs one device once and its terms never change (issue 5)'); END;
