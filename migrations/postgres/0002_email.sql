-- The email plugin's local store for PostgreSQL (DESIGN §5): the synced headers that searches
-- and cards read, and the trashed ledger that makes trash_email reversible by restore_email.
-- Owned by plugins/email; independent of 0001_core.sql (no foreign keys into core tables).
--
-- The same tables and columns as migrations/sqlite/0002_email.sql, and the plugin runs the same
-- statements on both engines. Conventions, as in 0001_core.sql:
-- * Timestamps are RFC 3339 UTC text with 9 fractional digits and `Z`
--   (`YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`, iris_store::timestamp_text), in "C"-collated columns, so
--   text order is time order.
-- * Ids, keys, names and the search text use the "C" collation: byte comparison and byte order,
--   as on SQLite (the search's tie-break orders by id; word search is a byte substring test).
-- * Integers that SQLite stores as INTEGER (64-bit) are BIGINT.

-- One row per message the account holds outside Trash. Rebuilt from the provider by sync():
-- a row exists exactly while the message sits in one of the account's non-trash folders.
CREATE TABLE email_messages (
    -- The short id the model sees: "m" + 12 hex of SHA-256(account "\n" provider_key)
    -- (see plugins/email/src/id.rs for the rule and its collision fallback).
    id            TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    account       TEXT COLLATE "C" NOT NULL,
    -- The provider's bucket: "INBOX", a Maildir++ subfolder name, an IMAP mailbox, a Gmail label.
    folder        TEXT COLLATE "C" NOT NULL,
    -- The provider's message key: the Maildir unique base name (file name before ":2,"), later an
    -- IMAP "uidvalidity:uid" or a Gmail message id.
    provider_key  TEXT COLLATE "C" NOT NULL,
    -- Where the provider last had it (Maildir: "cur/NAME:2,S" or "new/NAME"); a hint only.
    location      TEXT COLLATE "C" NOT NULL DEFAULT '',
    message_id    TEXT COLLATE "C",
    in_reply_to   TEXT COLLATE "C",
    -- JSON array of message ids from the References header, oldest first.
    refs          TEXT NOT NULL DEFAULT '[]',
    thread_id     TEXT COLLATE "C" NOT NULL,
    subject       TEXT NOT NULL DEFAULT '',
    from_name     TEXT,
    from_address  TEXT,
    -- JSON arrays of {"name": ..., "address": ...}.
    to_addrs      TEXT NOT NULL DEFAULT '[]',
    cc_addrs      TEXT NOT NULL DEFAULT '[]',
    -- The Date header as Unix seconds (UTC); NULL when missing or unparseable.
    date_unix     BIGINT,
    snippet       TEXT NOT NULL DEFAULT '',
    -- promotions | newsletters | orders | receipts | personal (plugins/email/src/category.rs).
    category      TEXT COLLATE "C" NOT NULL,
    -- Lower-cased subject, sender and snippet, for case-insensitive word search.
    search_text   TEXT COLLATE "C" NOT NULL DEFAULT '',
    synced_at     TEXT COLLATE "C" NOT NULL,
    CONSTRAINT email_messages_place_key UNIQUE (account, folder, provider_key)
);

CREATE INDEX email_messages_account_key ON email_messages (account, provider_key);
CREATE INDEX email_messages_date ON email_messages (date_unix);
CREATE INDEX email_messages_category ON email_messages (category, date_unix);
CREATE INDEX email_messages_message_id ON email_messages (account, message_id);
CREATE INDEX email_messages_thread ON email_messages (thread_id);

-- The trashed ledger: one row per message trash_email moved to Trash. Rows are never deleted;
-- restore_email stamps restored_at. state: 'trashing' (written before the move, so a crash
-- between the move and the update still leaves a trace restore can use), 'trashed',
-- 'missing' (the file was gone when trash ran), 'failed', 'restored'.
CREATE TABLE email_trashed (
    -- Increasing in insertion order and never reused (SQLite: INTEGER PRIMARY KEY AUTOINCREMENT).
    seq               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email_id          TEXT COLLATE "C" NOT NULL,
    account           TEXT COLLATE "C" NOT NULL,
    batch_id          TEXT COLLATE "C" NOT NULL,
    state             TEXT NOT NULL CONSTRAINT email_trashed_state_check
                      CHECK (state IN ('trashing', 'trashed', 'missing', 'failed', 'restored')),
    provider_key      TEXT COLLATE "C" NOT NULL,
    -- Where it came from: the folder, and the provider location inside it (Maildir "new/NAME").
    original_folder   TEXT COLLATE "C" NOT NULL,
    original_location TEXT COLLATE "C" NOT NULL DEFAULT '',
    -- Where it went (Maildir ".Trash/cur/NAME:2,S"); empty until the move happened.
    trash_location    TEXT COLLATE "C" NOT NULL DEFAULT '',
    message_id        TEXT COLLATE "C",
    subject           TEXT NOT NULL DEFAULT '',
    from_name         TEXT,
    from_address      TEXT,
    date_unix         BIGINT,
    -- The email_messages row as JSON, reinstated as it was when the message is restored.
    row_json          TEXT NOT NULL,
    trashed_at        TEXT COLLATE "C" NOT NULL,
    restored_at       TEXT COLLATE "C"
);

CREATE INDEX email_trashed_batch ON email_trashed (batch_id);
CREATE INDEX email_trashed_email ON email_trashed (email_id, state);
