-- IRIS approvals: the files plugin's journal, for SQLite (plugins/files/src/journal.rs).
-- Same rule as migrations/postgres/0031_files_journal.sql.
--
-- ADR-0067 (docs/adr/0067-files-quarantine.md): IRIS never silently deletes a file; it moves it
-- to its root's quarantine. One row per entry of a quarantine_files batch, written (state
-- 'moving') before the entry is moved, so a crash between the row and the move, or between the
-- move and its fsync, leaves a row that says where to look: at its path or at quarantine_rel,
-- found by device and inode. 'quarantined' once moved and flushed, 'restored' once moved back,
-- 'purged' once purge_quarantine deleted it for good. An entry left alone loses its row.
CREATE TABLE IF NOT EXISTS files_journal (
    batch_id        TEXT NOT NULL,
    -- The entry's id, ROOT/relative/path (plugins/files/src/id.rs).
    entry_id        TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    root            TEXT NOT NULL,
    -- Where it is in quarantine, relative to the root: .iris-quarantine/BATCH/relative/path.
    quarantine_rel  TEXT NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('file', 'folder', 'link', 'other')),
    size            INTEGER NOT NULL,
    dev             TEXT NOT NULL,
    ino             TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('moving', 'quarantined', 'restored', 'purged')),
    moved_at        TEXT NOT NULL,
    restored_at     TEXT,
    purged_at       TEXT,
    PRIMARY KEY (batch_id, entry_id)
);

CREATE INDEX IF NOT EXISTS files_journal_by_conversation
    ON files_journal (conversation_id, moved_at);
CREATE INDEX IF NOT EXISTS files_journal_by_root
    ON files_journal (root, state);
