-- The email plugin's incremental sync marks (issue 4; plugins/email/src/sync.rs), PostgreSQL.
-- Same rule as migrations/sqlite/0012_email_sync_state.sql.
--
-- One row per (account, folder) whose provider reports a folder status (IMAP: UIDVALIDITY,
-- UIDNEXT, MESSAGES from STATUS; a Maildir reports none and has no rows). Written only after a
-- sync applied that folder's rows, so a crash in between just lists the folder again. A folder
-- whose three marks are unchanged is not listed again; a changed validity drops the folder's
-- rows and reads it afresh.
CREATE TABLE IF NOT EXISTS email_sync_state (
    account        TEXT COLLATE "C" NOT NULL,
    folder         TEXT COLLATE "C" NOT NULL,
    -- IMAP UIDVALIDITY: keys of one validity never name another validity's messages.
    validity       BIGINT NOT NULL,
    -- IMAP UIDNEXT: every message added later has a key at or above it.
    next_key       BIGINT NOT NULL,
    -- IMAP MESSAGES (EXISTS): catches removals, which leave UIDNEXT alone.
    message_count  BIGINT NOT NULL,
    synced_at      TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (account, folder)
);
