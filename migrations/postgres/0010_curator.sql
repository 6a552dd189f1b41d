-- IRIS approvals: the curator table for PostgreSQL (crates/store/src/curator.rs; DESIGN §2
-- "escalation"). One row per verdict a judge gave a finished turn, in `shadow` and `enforce`
-- mode alike, with whether escalation acted on it and, when it did not, which rule said no
-- (iris_core::escalation::NotActed). Append-only: the database refuses updates, deletes and
-- TRUNCATE. Same columns and rules as migrations/sqlite/0010_curator.sql; times are RFC 3339
-- UTC text with nanoseconds in the "C" collation, as in 0001_core.sql.

CREATE TABLE curator_verdicts (
    seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              TEXT COLLATE "C" NOT NULL UNIQUE,
    run_id          TEXT COLLATE "C" NOT NULL,
    conversation_id TEXT COLLATE "C" NOT NULL,
    hop             BIGINT NOT NULL CONSTRAINT curator_verdicts_hop_check CHECK (hop >= 0),
    verdict         TEXT NOT NULL CONSTRAINT curator_verdicts_verdict_check
                    CHECK (verdict IN ('ok', 'escalate', 'reroute', 'clarify')),
    reason          TEXT NOT NULL,
    mode            TEXT NOT NULL CONSTRAINT curator_verdicts_mode_check
                    CHECK (mode IN ('shadow', 'enforce')),
    acted           BOOLEAN NOT NULL,
    not_acted       TEXT CONSTRAINT curator_verdicts_not_acted_check
                    CHECK (not_acted IN ('resumed', 'effects_unknown', 'effects_executed',
                                         'awaiting_approval', 'no_action', 'hop_limit',
                                         'shadow')),
    at              TEXT COLLATE "C" NOT NULL,
    -- Acted exactly when there is no reason not to; shadow mode never acts.
    CONSTRAINT curator_verdicts_acted_check CHECK (acted = (not_acted IS NULL)),
    CONSTRAINT curator_verdicts_shadow_check CHECK (mode = 'enforce' OR NOT acted)
);

CREATE INDEX curator_verdicts_conversation ON curator_verdicts (conversation_id, seq);
CREATE INDEX curator_verdicts_run ON curator_verdicts (run_id);

CREATE TRIGGER curator_verdicts_no_update BEFORE UPDATE ON curator_verdicts FOR EACH ROW
EXECUTE FUNCTION iris_refuse('the curator table is append-only (DESIGN §2 escalation): no update');

CREATE TRIGGER curator_verdicts_no_delete BEFORE DELETE ON curator_verdicts FOR EACH ROW
EXECUTE FUNCTION iris_refuse('the curator table is append-only (DESIGN §2 escalation): no delete');

CREATE TRIGGER curator_verdicts_no_truncate BEFORE TRUNCATE ON curator_verdicts FOR EACH STATEMENT
EXECUTE FUNCTION iris_refuse('the curator table is append-only (DESIGN §2 escalation): no delete');
