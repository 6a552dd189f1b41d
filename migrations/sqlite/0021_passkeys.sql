-- IRIS approvals: passkeys bound to the call, for SQLite (ADR-0118 decision 4;
-- crates/core/src/passkey.rs, crates/core/src/ports/passkeys.rs). Same rules as
-- migrations/postgres/0021_passkeys.sql.
--
-- * `approvals.passkey_required`: whether approving the row needs the owner's passkey, pinned
--   when the row is written (`IRIS_PASSKEY_REQUIRED`), immutable like the other request terms.
-- * `passkeys`: the owner's passkeys (the verifier's stored credential: public key, counter).
--   A removed passkey keeps its row (`removed_at`) so old decisions can still be verified.
-- * `passkey_ceremonies`: every challenge the server made (registration, a proof before the
--   set changes, or approving one approval and its call hash); lapses after two minutes and
--   is used once (`used_at` set by compare-and-set in the commit that uses it). Kept, so the
--   decision's audit entry can be checked again against its challenge (`iris audit verify`).
ALTER TABLE approvals ADD COLUMN passkey_required INTEGER NOT NULL DEFAULT 0
    CHECK (passkey_required IN (0, 1));

CREATE TRIGGER approvals_immutable_passkey_required BEFORE UPDATE OF passkey_required ON approvals
WHEN NEW.passkey_required IS NOT OLD.passkey_required
BEGIN SELECT RAISE(ABORT, 'approval request terms are immutable (DESIGN §2): passkey_required'); END;

CREATE TABLE passkeys (
    id            TEXT PRIMARY KEY NOT NULL,
    credential_id TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    key           TEXT NOT NULL,
    added_by      TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    last_used_at  TEXT,
    removed_at    TEXT,
    removed_by    TEXT
);

CREATE TABLE passkey_ceremonies (
    id          TEXT PRIMARY KEY NOT NULL,
    purpose     TEXT NOT NULL CHECK (purpose IN ('register', 'manage', 'approve')),
    approval_id TEXT REFERENCES approvals (id),
    call_hash   TEXT,
    state       TEXT NOT NULL,
    device      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    used_at     TEXT,
    CHECK ((purpose = 'approve') = (approval_id IS NOT NULL AND call_hash IS NOT NULL))
);

CREATE INDEX passkey_ceremonies_approval ON passkey_ceremonies (approval_id);
