-- IRIS approvals: which Telegram message shows which approval, for PostgreSQL (issue 5
-- "Telegram"; server/src/telegram/mod.rs). Same rule as migrations/sqlite/0015_telegram_cards.sql.
--
-- One row per (owner's chat, approval). It survives a restart, so an answer given on another
-- surface or a lapse still edits the old message, and a card is sent to a chat once:
-- * The row is written (without `message_id`) before `sendMessage`, as the claim that this
--   process sends the card; a second claim for the same chat and approval is refused by the
--   primary key, so a start-up backlog and a live `approval.requested` never both send it.
-- * `message_id` is the sent message; NULL only while sending (a failed send removes the row,
--   a crash mid-send leaves it, and the next start sends that card again).
-- * `view` and `shown_text` are what the message shows now (`shown_text` NULL when unknown: a
--   message learnt from a tap); `settled` is set once it shows an outcome that no longer
--   changes, so start-up only looks at the rest.
CREATE TABLE IF NOT EXISTS telegram_cards (
    chat_id      BIGINT NOT NULL,
    approval_id  TEXT COLLATE "C" NOT NULL REFERENCES approvals (id),
    message_id   BIGINT,
    view         TEXT NOT NULL CHECK (view IN ('card', 'confirm', 'closed')),
    shown_text   TEXT,
    settled      BOOLEAN NOT NULL DEFAULT FALSE,
    -- When the card was claimed for sending (RFC 3339 UTC text, as every time in this schema).
    sent_at      TEXT COLLATE "C" NOT NULL,
    updated_at   TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (chat_id, approval_id),
    -- Only a sent message can show the confirm view or an outcome.
    CHECK (view = 'card' OR message_id IS NOT NULL),
    CHECK (NOT settled OR view = 'closed')
);

CREATE INDEX IF NOT EXISTS telegram_cards_unsettled ON telegram_cards (chat_id, settled);
