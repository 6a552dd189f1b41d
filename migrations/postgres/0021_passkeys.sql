-- IRIS approvals: passkeys bound to the call, for PostgreSQL (ADR-0118 decision 4;
-- crates/core/src/passkey.rs, crates/core/src/ports/passkeys.rs). Same rules as
-- migrations/sqlite/0021_passkeys.sql.
--
-- * `approvals.passkey_required`: whether approving the row needs the owner's passkey, pinned
--   when the row is written (`IRIS_PASSKEY_REQUIRED`), immutable like the other request terms.
-- * `passkeys`: the owner's passkeys (the verifier's stored credential: public key, counter).
--   A removed passkey keeps its row (`removed_at`) so old decisions can still be verified.
-- * `passkey_ceremonies`: every challenge the server made (registration, a proof before the
--   set changes, or approving one approval and its call hash); lapses after two minutes and
--   is used once (`used_at` set by compare-and-set in the commit that uses it). Kept, so the
--   decision's audit entry can be checked again against its challenge (`iris audit verify`).
ALTER TABLE approvals ADD COLUMN passkey_required BOOLEAN NOT NULL DEFAULT FALSE;

CREATE TRIGGER approvals_immutable_passkey_required BEFORE UPDATE OF passkey_required ON approvals
FOR EACH ROW
WHEN (NEW.passkey_required IS DISTINCT FROM OLD.passkey_required)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): passkey_required');

CREATE TABLE passkeys (
    id            TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    credential_id TEXT COLLATE "C" NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    key           TEXT NOT NULL,
    added_by      TEXT COLLATE "C" NOT NULL,
    created_at    TEXT COLLATE "C" NOT NULL,
    last_used_at  TEXT COLLATE "C",
    removed_at    TEXT COLLATE "C",
    removed_by    TEXT COLLATE "C"
);

CREATE TABLE passkey_ceremonies (
    id          TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    purpose     TEXT NOT NULL CHECK (purpose IN ('register', 'manage', 'approve')),
    approval_id TEXT COLLATE "C" REFERENCES approvals (id),
    call_hash   TEXT COLLATE "C",
    state       TEXT NOT NULL,
    device      TEXT COLLATE "C" NOT NULL,
    created_at  TEXT COLLATE "C" NOT NULL,
    expires_at  TEXT COLLATE "C" NOT NULL,
    used_at     TEXT COLLATE "C",
    CHECK ((purpose = 'approve') = (approval_id IS NOT NULL AND call_hash IS NOT NULL))
);

CREATE INDEX passkey_ceremonies_approval ON passkey_ceremonies (approval_id);
