-- IRIS approvals: the `agent` scope, for PostgreSQL (DESIGN §2 "device, scope"; the MCP gateway).
-- Same rules as migrations/sqlite/0022_agent_scope.sql.
--
-- * `devices.scope` may be `agent`: a token for an AI agent (`iris devices add --scope agent`
--   only; pairing links stay read or control).
-- * `approvals.requested_by`: the agent device that requested the call through the gateway
--   (NULL for IRIS's own assistant); an agent reads only its own rows. Immutable like the other
--   request terms.
ALTER TABLE devices DROP CONSTRAINT devices_scope_check;
ALTER TABLE devices ADD CONSTRAINT devices_scope_check CHECK (scope IN ('read', 'control', 'agent'));

ALTER TABLE approvals ADD COLUMN requested_by TEXT COLLATE "C";

CREATE TRIGGER approvals_immutable_requested_by BEFORE UPDATE OF requested_by ON approvals
FOR EACH ROW
WHEN (NEW.requested_by IS DISTINCT FROM OLD.requested_by)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): requested_by');

CREATE INDEX approvals_requested_by ON approvals (requested_by, created_at, id)
    WHERE requested_by IS NOT NULL;
