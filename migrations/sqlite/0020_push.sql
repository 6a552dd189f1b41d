-- IRIS approvals: Web Push to the owner's devices, for SQLite (DESIGN §9 "the owner's phone";
-- crates/core/src/push, crates/core/src/ports/push.rs). Same rules as
-- migrations/postgres/0020_push.sql.
--
-- * `push_vapid`: the server's one VAPID key pair (RFC 8292), made by the first server that
--   needs it and never replaced (browsers subscribed against its public key).
-- * `push_subscriptions`: one row per browser endpoint, owned by the device that made it (a
--   revoked device's rows are deleted with the revoke).
-- * `push_outbox`: one job per (subscription, approval, kind), written in the commit of the
--   event it announces; `pending` until a server's lease sends it (`sent`), gives it up
--   (`gave_up`: refused for good, or past `give_up_at`), or the subscription is gone (the job
--   is deleted with it).
CREATE TABLE push_vapid (
    id          INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    private_key TEXT NOT NULL,
    public_key  TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

CREATE TABLE push_subscriptions (
    id         TEXT PRIMARY KEY NOT NULL,
    device     TEXT NOT NULL,
    endpoint   TEXT NOT NULL UNIQUE,
    p256dh     TEXT NOT NULL,
    auth       TEXT NOT NULL,
    expires_at TEXT,
    created_at TEXT NOT NULL
);

CREATE INDEX push_subscriptions_device ON push_subscriptions (device, created_at);

CREATE TABLE push_outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    subscription_id TEXT NOT NULL REFERENCES push_subscriptions (id) ON DELETE CASCADE,
    approval_id     TEXT NOT NULL REFERENCES approvals (id),
    kind            TEXT NOT NULL CHECK (kind IN ('requested', 'closed')),
    -- The decrypted payload (crates/core/src/push `PushMessage`), JSON.
    message         TEXT NOT NULL,
    deliver_until   TEXT NOT NULL,
    give_up_at      TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'gave_up')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_at         TEXT NOT NULL,
    lease_owner     TEXT,
    lease_until     TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    UNIQUE (subscription_id, approval_id, kind)
);

CREATE INDEX push_outbox_due ON push_outbox (state, next_at);
CREATE INDEX push_outbox_finished ON push_outbox (state, updated_at);
