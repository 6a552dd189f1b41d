-- IRIS approvals: the calendar plugin's kept copies, for PostgreSQL (plugins/calendar/src/kept.rs).
-- Same rule as migrations/sqlite/0030_calendar_kept.sql.
--
-- CalDAV has no trash, so the plugin keeps what delete_events removes: one row per event of a
-- batch, written (state 'deleting') with the exact bytes the server returned before the DELETE
-- is sent, then 'deleted' when it is gone; an event left alone (changed since the card, or
-- already gone) loses its row. restore_events puts the bytes back verbatim and marks the row
-- 'restored', so a batch is restored once.
CREATE TABLE IF NOT EXISTS calendar_kept (
    batch_id        TEXT NOT NULL,
    event_id        TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    account         TEXT NOT NULL,
    calendar_href   TEXT NOT NULL,
    calendar_name   TEXT NOT NULL,
    href            TEXT NOT NULL,
    uid             TEXT,
    etag            TEXT NOT NULL,
    -- The resource's exact bytes, base64 (an event in a broken encoding comes back as it was).
    bytes_b64       TEXT NOT NULL,
    summary         TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('deleting', 'deleted', 'restored')),
    deleted_at      TEXT NOT NULL,
    restored_at     TEXT,
    PRIMARY KEY (batch_id, event_id)
);

CREATE INDEX IF NOT EXISTS calendar_kept_by_conversation
    ON calendar_kept (conversation_id, deleted_at);
CREATE INDEX IF NOT EXISTS calendar_kept_by_event
    ON calendar_kept (event_id, deleted_at);
