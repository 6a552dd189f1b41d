-- IRIS approvals: Web Push to the owner's devices, for PostgreSQL (DESIGN §9 "the owner's phone";
-- crates/core/src/push, crates/core/src/ports/push.rs). Same rules as
-- migrations/sqlite/0020_push.sql.
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
    id          BIGINT PRIMARY KEY NOT NULL CHECK (id = 1),
    private_key TEXT NOT NULL,
    public_key  TEXT NOT NULL,
    created_at  TEXT COLLATE "C" NOT NULL
);

CREATE TABLE push_subscriptions (
    id         TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    device     TEXT COLLATE "C" NOT NULL,
    endpoint   TEXT COLLATE "C" NOT NULL UNIQUE,
    p256dh     TEXT NOT NULL,
    auth       TEXT NOT NULL,
    expires_at TEXT COLLATE "C",
    created_at TEXT COLLATE "C" NOT NULL
);

CREATE INDEX push_subscriptions_device ON push_subscriptions (device, created_at);

CREATE TABLE push_outbox (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subscription_id TEXT COLLATE "C" NOT NULL REFERENCES push_subscriptions (id) ON DELETE CASCADE,
    approval_id     TEXT COLLATE "C" NOT NULL REFERENCES approvals (id),
    kind            TEXT NOT NULL CHECK (kind IN ('requested', 'closed')),
    -- The decrypted payload (crates/core/src/push `PushMessage`), JSON.
    message         TEXT NOT NULL,
    deliver_until   TEXT COLLATE "C" NOT NULL,
    give_up_at      TEXT COLLATE "C" NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'gave_up')),
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_at         TEXT COLLATE "C" NOT NULL,
    lease_owner     TEXT COLLATE "C",
    lease_until     TEXT COLLATE "C",
    created_at      TEXT COLLATE "C" NOT NULL,
    updated_at      TEXT COLLATE "C" NOT NULL,
    UNIQUE (subscription_id, approval_id, kind)
);

CREATE INDEX push_outbox_due ON push_outbox (state, next_at);
CREATE INDEX push_outbox_finished ON push_outbox (state, updated_at);
