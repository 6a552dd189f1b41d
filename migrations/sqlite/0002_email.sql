-- The email plugin's local store (DESIGN §5): the synced headers that searches and cards read,
-- and the trashed ledger that makes trash_email reversible by restore_email.
-- Owned by plugins/email; independent of 0001_core.sql (no foreign keys into core tables).

-- One row per message the account holds outside Trash. Rebuilt from the provider by sync():
-- a row exists exactly while the message sits in one of the account's non-trash folders.
CREATE TABLE IF NOT EXISTS email_messages (
    -- The short id the model sees: "m" + 12 hex of SHA-256(account "\n" provider_key)
    -- (see plugins/email/src/id.rs for the rule and its collision fallback).
    id            TEXT PRIMARY KEY NOT NULL,
    account       TEXT NOT NULL,
    -- The provider's bucket: "INBOX", a Maildir++ subfolder name, an IMAP mailbox, a Gmail label.
    folder        TEXT NOT NULL,
    -- The provider's message key: the Maildir unique base name (file name before ":2,"), later an
    -- IMAP "uidvalidity:uid" or a Gmail message id.
    provider_key  TEXT NOT NULL,
    -- Where the provider last had it (Maildir: "cur/NAME:2,S" or "new/NAME"); a hint only.
    location      TEXT NOT NULL DEFAULT '',
    message_id    TEXT,
    in_reply_to   TEXT,
    -- JSON array of message ids from the References header, oldest first.
    refs          TEXT NOT NULL DEFAULT '[]',
    thread_id     TEXT NOT NULL,
    subject       TEXT NOT NULL DEFAULT '',
    from_name     TEXT,
    from_address  TEXT,
    -- JSON arrays of {"name": ..., "address": ...}.
    to_addrs      TEXT NOT NULL DEFAULT '[]',
    cc_addrs      TEXT NOT NULL DEFAULT '[]',
    -- The Date header as Unix seconds (UTC); NULL when missing or unparseable.
    date_unix     INTEGER,
    snippet       TEXT NOT NULL DEFAULT '',
    -- promotions | newsletters | orders | receipts | personal (plugins/email/src/category.rs).
    category      TEXT NOT NULL,
    -- Lower-cased subject, sender and snippet, for case-insensitive word search.
    search_text   TEXT NOT NULL DEFAULT '',
    synced_at     TEXT NOT NULL,
    UNIQUE (account, folder, provider_key)
);

CREATE INDEX IF NOT EXISTS email_messages_account_key ON email_messages (account, provider_key);
CREATE INDEX IF NOT EXISTS email_messages_date ON email_messages (date_unix);
CREATE INDEX IF NOT EXISTS email_messages_category ON email_messages (category, date_unix);
CREATE INDEX IF NOT EXISTS email_messages_message_id ON email_messages (account, message_id);
CREATE INDEX IF NOT EXISTS email_messages_thread ON email_messages (thread_id);

-- The trashed ledger: one row per message trash_email moved to Trash. Rows are never deleted;
-- restore_email stamps restored_at. state: 'trashing' (written before the move, so a crash
-- between the move and the update still leaves a trace restore can use), 'trashed',
-- 'missing' (the file was gone when trash ran), 'failed', 'restored'.
CREATE TABLE IF NOT EXISTS email_trashed (
    seq               INTEGER PRIMARY KEY AUTOINCREMENT,
    email_id          TEXT NOT NULL,
    account           TEXT NOT NULL,
    batch_id          TEXT NOT NULL,
    state             TEXT NOT NULL CHECK (state IN ('trashing', 'trashed', 'missing', 'failed', 'restored')),
    provider_key      TEXT NOT NULL,
    -- Where it came from: the folder, and the provider location inside it (Maildir "new/NAME").
    original_folder   TEXT NOT NULL,
    original_location TEXT NOT NULL DEFAULT '',
    -- Where it went (Maildir ".Trash/cur/NAME:2,S"); empty until the move happened.
    trash_location    TEXT NOT NULL DEFAULT '',
    message_id        TEXT,
    subject           TEXT NOT NULL DEFAULT '',
    from_name         TEXT,
    from_address      TEXT,
    date_unix         INTEGER,
    -- The email_messages row as JSON, reinstated as it was when the message is restored.
    row_json          TEXT NOT NULL,
    trashed_at        TEXT NOT NULL,
    restored_at       TEXT
);

CREATE INDEX IF NOT EXISTS email_trashed_batch ON email_trashed (batch_id);
CREATE INDEX IF NOT EXISTS email_trashed_email ON email_trashed (email_id, state);
