-- IRIS approvals: what the email plugin did in each conversation, for SQLite (DESIGN §5
-- "restore_email"). Same rule as migrations/postgres/0024_email_actions.sql.
--
-- One row per trash batch (written with the batch's ledger rows, before anything moves) and per
-- sent mail (written once the mail is out). "Undo that" (restore_email without ids) undoes the
-- newest row of its own conversation, once: a batch already restored, or a sent mail (which
-- cannot be unsent), is said so, and nothing older is reached for.
CREATE TABLE IF NOT EXISTS email_actions (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('trash', 'send')),
    -- A trash: its batch in email_trashed. A send: NULL.
    batch_id        TEXT,
    -- A send: the subject and the recipients, as the owner is told them.
    summary         TEXT NOT NULL DEFAULT '',
    at              TEXT NOT NULL
);

CREATE INDEX IF NOT EXISTS email_actions_by_conversation
    ON email_actions (conversation_id, seq);
