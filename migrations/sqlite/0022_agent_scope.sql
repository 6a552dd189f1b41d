-- IRIS approvals: the `agent` scope, for SQLite (DESIGN §2 "device, scope"; the MCP gateway).
-- Same rules as migrations/postgres/0022_agent_scope.sql.
--
-- * `devices.scope` may be `agent`: a token for an AI agent (`iris devices add --scope agent`
--   only; pairing links stay read or control). SQLite cannot widen a CHECK in place, so the table
--   is made anew with its rows, index and trigger.
-- * `approvals.requested_by`: the agent device that requested the call through the gateway
--   (NULL for IRIS's own assistant); an agent reads only its own rows. Immutable like the other
--   request terms.
CREATE TABLE devices_with_agents (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    name         TEXT NOT NULL,
    scope        TEXT NOT NULL CHECK (scope IN ('read', 'control', 'agent')),
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at   TEXT
);

INSERT INTO devices_with_agents (id, name, scope, token_hash, created_at, last_used_at, revoked_at)
SELECT id, name, scope, token_hash, created_at, last_used_at, revoked_at FROM devices;

DROP TABLE devices;

ALTER TABLE devices_with_agents RENAME TO devices;

CREATE UNIQUE INDEX devices_live_name ON devices (name) WHERE revoked_at IS NULL;

CREATE TRIGGER devices_immutable BEFORE UPDATE ON devices
WHEN NEW.name IS NOT OLD.name
  OR NEW.scope IS NOT OLD.scope
  OR NEW.token_hash IS NOT OLD.token_hash
  OR NEW.created_at IS NOT OLD.created_at
  OR (OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS NOT OLD.revoked_at)
BEGIN SELECT RAISE(ABORT, 'a device keeps its name, scope and token; a revocation is final (DESIGN §2 device)'); END;

ALTER TABLE approvals ADD COLUMN requested_by TEXT;

CREATE TRIGGER approvals_immutable_requested_by BEFORE UPDATE OF requested_by ON approvals
WHEN NEW.requested_by IS NOT OLD.requested_by
BEGIN SELECT RAISE(ABORT, 'approval request terms are immutable (DESIGN §2): requested_by'); END;

CREATE INDEX approvals_requested_by ON approvals (requested_by, created_at, id)
    WHERE requested_by IS NOT NULL;
