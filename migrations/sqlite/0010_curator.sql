-- IRIS approvals: the curator table for SQLite (crates/store/src/curator.rs; DESIGN §2
-- "escalation"). One row per verdict a judge gave a finished turn, in `shadow` and `enforce`
-- mode alike, with whether escalation acted on it and, when it did not, which rule said no
-- (iris_core::escalation::NotActed). Append-only: the database refuses updates and deletes.
-- Same columns and rules as migrations/postgres/0010_curator.sql.

CREATE TABLE curator_verdicts (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    run_id          TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    hop             INTEGER NOT NULL CHECK (hop >= 0),
    verdict         TEXT NOT NULL CHECK (verdict IN ('ok', 'escalate', 'reroute', 'clarify')),
    reason          TEXT NOT NULL,
    mode            TEXT NOT NULL CHECK (mode IN ('shadow', 'enforce')),
    acted           INTEGER NOT NULL CHECK (acted IN (0, 1)),
    not_acted       TEXT CHECK (not_acted IN ('resumed', 'effects_unknown', 'effects_executed',
                                              'awaiting_approval', 'no_action', 'hop_limit',
                                              'shadow')),
    at              TEXT NOT NULL,
    -- Acted exactly when there is no reason not to; shadow mode never acts.
    CHECK ((acted = 1) = (not_acted IS NULL)),
    CHECK (mode = 'enforce' OR acted = 0)
);

CREATE INDEX curator_verdicts_conversation ON curator_verdicts (conversation_id, seq);
CREATE INDEX curator_verdicts_run ON curator_verdicts (run_id);

CREATE TRIGGER curator_verdicts_no_update BEFORE UPDATE ON curator_verdicts
BEGIN SELECT RAISE(ABORT, 'the curator table is append-only (DESIGN §2 escalation): no update'); END;

CREATE TRIGGER curator_verdicts_no_delete BEFORE DELETE ON curator_verdicts
BEGIN SELECT RAISE(ABORT, 'the curator table is append-only (DESIGN §2 escalation): no delete'); END;
