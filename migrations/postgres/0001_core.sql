-- IRIS approvals, core schema for PostgreSQL (crates/store, DESIGN §2, §6, §8).
--
-- The same tables and the same rules as migrations/sqlite/0001_core.sql, so both engines behave
-- alike. Conventions:
-- * Timestamps are RFC 3339 UTC text with a fixed precision, always written by the store as
--   `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ` (9 fractional digits, `Z`), exactly as on SQLite: instants
--   keep their nanoseconds (timestamptz would keep microseconds only), and with the "C" collation
--   text order is time order, so `<=` compares instants whatever the database's default
--   collation is.
-- * JSON values are stored as TEXT (serde_json output), as on SQLite: the stored bytes are the
--   bytes written, and a row that does not parse is reported by the store as corrupt.
--   `args_canonical` is the RFC 8785 text a claim compares byte for byte ("C" collation).
-- * Ids and names that are ordered use the "C" collation too (byte order, as on SQLite).
-- * What must never change is refused by the database itself (triggers below, one per rule, with
--   the same messages as on SQLite), so no code path, a resume included, can change what was
--   approved (DESIGN §6). TRUNCATE, which skips row triggers, is refused as well.

-- Refuses the statement with the rule named in the trigger's first argument.
CREATE FUNCTION iris_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING MESSAGE = TG_ARGV[0], ERRCODE = 'integrity_constraint_violation';
END;
$$;

-- ---------------------------------------------------------------------------------------------
-- The approval queue: one row per gated call. Request terms are immutable once written; the
-- response is written once; rows are never deleted.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE approvals (
    id              TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    kind            TEXT NOT NULL CONSTRAINT approvals_kind_check
                    CHECK (kind IN ('destructive', 'pinned_write', 'evaluator')),
    status          TEXT NOT NULL DEFAULT 'pending' CONSTRAINT approvals_status_check
                    CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
    tool            TEXT COLLATE "C" NOT NULL,
    args            TEXT NOT NULL,
    args_canonical  TEXT COLLATE "C" NOT NULL,
    call_hash       TEXT NOT NULL,
    items           TEXT NOT NULL,
    card            TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    context_summary TEXT NOT NULL,
    created_at      TEXT COLLATE "C" NOT NULL,
    expires_at      TEXT COLLATE "C" NOT NULL,
    responded_at    TEXT COLLATE "C",
    responded_by    TEXT,
    surface         TEXT,
    reason          TEXT,
    -- References checkpoints (id); the constraint is added once that table exists.
    checkpoint_id   TEXT COLLATE "C",
    resumed_at      TEXT COLLATE "C",
    resume_error    TEXT
);

CREATE INDEX approvals_status_created ON approvals (status, created_at);
CREATE INDEX approvals_status_expires ON approvals (status, expires_at);
CREATE INDEX approvals_responded ON approvals (responded_at);

-- Request terms: one trigger per column so the refusal names it.
CREATE TRIGGER approvals_immutable_id BEFORE UPDATE OF id ON approvals FOR EACH ROW
WHEN (NEW.id IS DISTINCT FROM OLD.id)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): id');

CREATE TRIGGER approvals_immutable_kind BEFORE UPDATE OF kind ON approvals FOR EACH ROW
WHEN (NEW.kind IS DISTINCT FROM OLD.kind)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): kind');

CREATE TRIGGER approvals_immutable_tool BEFORE UPDATE OF tool ON approvals FOR EACH ROW
WHEN (NEW.tool IS DISTINCT FROM OLD.tool)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): tool');

CREATE TRIGGER approvals_immutable_args BEFORE UPDATE OF args ON approvals FOR EACH ROW
WHEN (NEW.args IS DISTINCT FROM OLD.args)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): args');

CREATE TRIGGER approvals_immutable_args_canonical BEFORE UPDATE OF args_canonical ON approvals
FOR EACH ROW
WHEN (NEW.args_canonical IS DISTINCT FROM OLD.args_canonical)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): args_canonical');

CREATE TRIGGER approvals_immutable_call_hash BEFORE UPDATE OF call_hash ON approvals FOR EACH ROW
WHEN (NEW.call_hash IS DISTINCT FROM OLD.call_hash)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): call_hash');

CREATE TRIGGER approvals_immutable_items BEFORE UPDATE OF items ON approvals FOR EACH ROW
WHEN (NEW.items IS DISTINCT FROM OLD.items)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): items');

CREATE TRIGGER approvals_immutable_card BEFORE UPDATE OF card ON approvals FOR EACH ROW
WHEN (NEW.card IS DISTINCT FROM OLD.card)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): card');

CREATE TRIGGER approvals_immutable_run_id BEFORE UPDATE OF run_id ON approvals FOR EACH ROW
WHEN (NEW.run_id IS DISTINCT FROM OLD.run_id)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): run_id');

CREATE TRIGGER approvals_immutable_context_summary BEFORE UPDATE OF context_summary ON approvals
FOR EACH ROW
WHEN (NEW.context_summary IS DISTINCT FROM OLD.context_summary)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): context_summary');

CREATE TRIGGER approvals_immutable_created_at BEFORE UPDATE OF created_at ON approvals
FOR EACH ROW
WHEN (NEW.created_at IS DISTINCT FROM OLD.created_at)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): created_at');

CREATE TRIGGER approvals_immutable_expires_at BEFORE UPDATE OF expires_at ON approvals
FOR EACH ROW
WHEN (NEW.expires_at IS DISTINCT FROM OLD.expires_at)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): expires_at');

-- A new row is pending and unanswered: consent is only ever written by a decision.
CREATE TRIGGER approvals_insert_pending BEFORE INSERT ON approvals FOR EACH ROW
WHEN (NEW.status IS DISTINCT FROM 'pending'
  OR NEW.responded_at IS NOT NULL OR NEW.responded_by IS NOT NULL
  OR NEW.surface IS NOT NULL OR NEW.reason IS NOT NULL OR NEW.resumed_at IS NOT NULL)
EXECUTE FUNCTION iris_refuse('a new approval row is pending and unanswered (DESIGN §2, §8)');

-- The response is written once: after the row left `pending`, none of it changes.
CREATE TRIGGER approvals_response_written_once BEFORE UPDATE ON approvals FOR EACH ROW
WHEN (OLD.status IS DISTINCT FROM 'pending' AND (
       NEW.status IS DISTINCT FROM OLD.status
    OR NEW.responded_at IS DISTINCT FROM OLD.responded_at
    OR NEW.responded_by IS DISTINCT FROM OLD.responded_by
    OR NEW.surface IS DISTINCT FROM OLD.surface
    OR NEW.reason IS DISTINCT FROM OLD.reason))
EXECUTE FUNCTION iris_refuse('an approval response is written once (DESIGN §2)');

-- While pending, the response fields move only together with the decision.
CREATE TRIGGER approvals_response_with_decision BEFORE UPDATE ON approvals FOR EACH ROW
WHEN (OLD.status = 'pending' AND NEW.status = 'pending' AND (
       NEW.responded_at IS DISTINCT FROM OLD.responded_at
    OR NEW.responded_by IS DISTINCT FROM OLD.responded_by
    OR NEW.surface IS DISTINCT FROM OLD.surface
    OR NEW.reason IS DISTINCT FROM OLD.reason))
EXECUTE FUNCTION iris_refuse('an approval response is written together with its decision (DESIGN §2)');

-- A decision records who answered, through which surface and when.
CREATE TRIGGER approvals_decision_complete BEFORE UPDATE OF status ON approvals FOR EACH ROW
WHEN (OLD.status = 'pending' AND NEW.status IS DISTINCT FROM 'pending' AND (
       NEW.responded_at IS NULL OR NEW.responded_by IS NULL OR NEW.surface IS NULL))
EXECUTE FUNCTION iris_refuse('a decision records who answered, through which surface and when (DESIGN §2)');

-- The link to the paused run's checkpoint is written once.
CREATE TRIGGER approvals_checkpoint_written_once BEFORE UPDATE OF checkpoint_id ON approvals
FOR EACH ROW
WHEN (OLD.checkpoint_id IS NOT NULL AND NEW.checkpoint_id IS DISTINCT FROM OLD.checkpoint_id)
EXECUTE FUNCTION iris_refuse('an approval is linked to its checkpoint once (DESIGN §3 step 4)');

-- A run resumes exactly once, and only after its approval was decided.
CREATE TRIGGER approvals_resumed_once BEFORE UPDATE OF resumed_at ON approvals FOR EACH ROW
WHEN (OLD.resumed_at IS NOT NULL AND NEW.resumed_at IS DISTINCT FROM OLD.resumed_at)
EXECUTE FUNCTION iris_refuse('a paused run resumes exactly once (DESIGN §3 step 6)');

CREATE TRIGGER approvals_resume_after_decision BEFORE UPDATE OF resumed_at ON approvals
FOR EACH ROW
WHEN (NEW.resumed_at IS NOT NULL AND NEW.status = 'pending')
EXECUTE FUNCTION iris_refuse('a paused run resumes only after its approval is decided (DESIGN §3 step 6)');

-- Nothing is lost.
CREATE TRIGGER approvals_no_delete BEFORE DELETE ON approvals FOR EACH ROW
EXECUTE FUNCTION iris_refuse('approval rows are never deleted (DESIGN §8: nothing is lost)');

CREATE TRIGGER approvals_no_truncate BEFORE TRUNCATE ON approvals FOR EACH STATEMENT
EXECUTE FUNCTION iris_refuse('approval rows are never deleted (DESIGN §8: nothing is lost)');

-- ---------------------------------------------------------------------------------------------
-- The side-effect ledger: one entry per approval, written `executing` by the claim before the
-- side effect and `executed` / `failed` after it; `unknown` after a crash. Never retried.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE ledger (
    approval_id    TEXT COLLATE "C" PRIMARY KEY NOT NULL REFERENCES approvals (id),
    tool           TEXT COLLATE "C" NOT NULL,
    args_canonical TEXT COLLATE "C" NOT NULL,
    state          TEXT NOT NULL CONSTRAINT ledger_state_check
                   CHECK (state IN ('executing', 'executed', 'failed', 'unknown')),
    result         TEXT,
    claimed_at     TEXT COLLATE "C" NOT NULL,
    finished_at    TEXT COLLATE "C"
);

CREATE INDEX ledger_state ON ledger (state);

-- A claim is checked against the approval row itself (DESIGN §2 "claim"). A trigger's WHEN
-- cannot hold a subquery in PostgreSQL, so this rule has a function of its own.
CREATE FUNCTION iris_ledger_claim_matches_approval() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state IS DISTINCT FROM 'executing' OR NOT EXISTS (
        SELECT 1 FROM approvals a
        WHERE a.id = NEW.approval_id
          AND a.status = 'approved'
          AND a.tool = NEW.tool
          AND a.args_canonical = NEW.args_canonical) THEN
        RAISE EXCEPTION USING
            MESSAGE = 'a claim needs an approved row naming this tool and exactly these arguments (DESIGN §2 claim)',
            ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER ledger_claim_matches_approval BEFORE INSERT ON ledger FOR EACH ROW
EXECUTE FUNCTION iris_ledger_claim_matches_approval();

CREATE TRIGGER ledger_terms_immutable BEFORE UPDATE ON ledger FOR EACH ROW
WHEN (NEW.approval_id IS DISTINCT FROM OLD.approval_id
  OR NEW.tool IS DISTINCT FROM OLD.tool
  OR NEW.args_canonical IS DISTINCT FROM OLD.args_canonical
  OR NEW.claimed_at IS DISTINCT FROM OLD.claimed_at)
EXECUTE FUNCTION iris_refuse('a ledger claim is immutable (DESIGN §2 side-effect ledger)');

CREATE TRIGGER ledger_outcome_written_once BEFORE UPDATE ON ledger FOR EACH ROW
WHEN (OLD.state IS DISTINCT FROM 'executing' AND (
       NEW.state IS DISTINCT FROM OLD.state
    OR NEW.result IS DISTINCT FROM OLD.result
    OR NEW.finished_at IS DISTINCT FROM OLD.finished_at))
EXECUTE FUNCTION iris_refuse('a ledger outcome is written once (DESIGN §2 side-effect ledger, §8 at most once)');

CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger FOR EACH ROW
EXECUTE FUNCTION iris_refuse('ledger entries are never deleted (DESIGN §8: at most once)');

CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON ledger FOR EACH STATEMENT
EXECUTE FUNCTION iris_refuse('ledger entries are never deleted (DESIGN §8: at most once)');

-- ---------------------------------------------------------------------------------------------
-- The audit log: append-only.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE audit_log (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    approval_id    TEXT COLLATE "C" NOT NULL,
    kind           TEXT NOT NULL CONSTRAINT audit_log_kind_check
                   CHECK (kind IN ('decision', 'execution', 'denial', 'lapse')),
    item           TEXT,
    result         TEXT NOT NULL,
    undo_available BOOLEAN NOT NULL,
    actor          TEXT NOT NULL,
    surface        TEXT,
    at             TEXT COLLATE "C" NOT NULL
);

CREATE INDEX audit_log_approval ON audit_log (approval_id, id);

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log FOR EACH ROW
EXECUTE FUNCTION iris_refuse('the audit log is append-only (DESIGN §2 audit log): no update');

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log FOR EACH ROW
EXECUTE FUNCTION iris_refuse('the audit log is append-only (DESIGN §2 audit log): no delete');

CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log FOR EACH STATEMENT
EXECUTE FUNCTION iris_refuse('the audit log is append-only (DESIGN §2 audit log): no delete');

-- ---------------------------------------------------------------------------------------------
-- Checkpoints of paused runs: one per approval, taken for resuming exactly once.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE checkpoints (
    id              TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    approval_id     TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES approvals (id),
    run_id          TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    body            TEXT NOT NULL,
    created_at      TEXT COLLATE "C" NOT NULL,
    resumed_at      TEXT COLLATE "C"
);

ALTER TABLE approvals ADD CONSTRAINT approvals_checkpoint_id_fkey
    FOREIGN KEY (checkpoint_id) REFERENCES checkpoints (id);

CREATE TRIGGER checkpoints_immutable BEFORE UPDATE ON checkpoints FOR EACH ROW
WHEN (NEW.id IS DISTINCT FROM OLD.id
  OR NEW.approval_id IS DISTINCT FROM OLD.approval_id
  OR NEW.run_id IS DISTINCT FROM OLD.run_id
  OR NEW.conversation_id IS DISTINCT FROM OLD.conversation_id
  OR NEW.body IS DISTINCT FROM OLD.body
  OR NEW.created_at IS DISTINCT FROM OLD.created_at)
EXECUTE FUNCTION iris_refuse('a checkpoint is saved once and never changed (DESIGN §2 checkpoint)');

CREATE TRIGGER checkpoints_resumed_once BEFORE UPDATE OF resumed_at ON checkpoints FOR EACH ROW
WHEN (OLD.resumed_at IS NOT NULL AND NEW.resumed_at IS DISTINCT FROM OLD.resumed_at)
EXECUTE FUNCTION iris_refuse('a paused run resumes exactly once (DESIGN §3 step 6)');

-- Taking a checkpoint marks its approval resumed in the same statement (the approval's own
-- triggers then refuse it while the approval is pending, which fails the whole statement).
CREATE FUNCTION iris_checkpoint_mark_approval_resumed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE approvals SET resumed_at = NEW.resumed_at WHERE id = NEW.approval_id;
    RETURN NULL;
END;
$$;

CREATE TRIGGER checkpoints_mark_approval_resumed AFTER UPDATE OF resumed_at ON checkpoints
FOR EACH ROW
WHEN (OLD.resumed_at IS NULL AND NEW.resumed_at IS NOT NULL)
EXECUTE FUNCTION iris_checkpoint_mark_approval_resumed();

CREATE TRIGGER checkpoints_no_delete BEFORE DELETE ON checkpoints FOR EACH ROW
EXECUTE FUNCTION iris_refuse('checkpoints are never deleted (DESIGN §8: nothing is lost)');

CREATE TRIGGER checkpoints_no_truncate BEFORE TRUNCATE ON checkpoints FOR EACH STATEMENT
EXECUTE FUNCTION iris_refuse('checkpoints are never deleted (DESIGN §8: nothing is lost)');

-- ---------------------------------------------------------------------------------------------
-- Conversations: the model transcript (JSON array of messages) and the lines the owner sees.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE conversations (
    id         TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    transcript TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE conversation_lines (
    seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    conversation_id TEXT COLLATE "C" NOT NULL,
    role            TEXT NOT NULL,
    text            TEXT NOT NULL,
    approval_id     TEXT COLLATE "C",
    created_at      TEXT COLLATE "C" NOT NULL
);

CREATE INDEX conversation_lines_conversation ON conversation_lines (conversation_id, seq);

-- ---------------------------------------------------------------------------------------------
-- Paired devices: tokens stored only as their hex SHA-256; a revoked device keeps its row.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE devices (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         TEXT COLLATE "C" NOT NULL,
    scope        TEXT NOT NULL CONSTRAINT devices_scope_check CHECK (scope IN ('read', 'control')),
    token_hash   TEXT COLLATE "C" NOT NULL CONSTRAINT devices_token_hash_key UNIQUE,
    created_at   TEXT COLLATE "C" NOT NULL,
    last_used_at TEXT COLLATE "C",
    revoked_at   TEXT COLLATE "C"
);

-- A name is unique among live devices (a revoked name can be paired again).
CREATE UNIQUE INDEX devices_live_name ON devices (name) WHERE revoked_at IS NULL;

CREATE TRIGGER devices_immutable BEFORE UPDATE ON devices FOR EACH ROW
WHEN (NEW.name IS DISTINCT FROM OLD.name
  OR NEW.scope IS DISTINCT FROM OLD.scope
  OR NEW.token_hash IS DISTINCT FROM OLD.token_hash
  OR NEW.created_at IS DISTINCT FROM OLD.created_at
  OR (OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS DISTINCT FROM OLD.revoked_at))
EXECUTE FUNCTION iris_refuse('a device keeps its name, scope and token; a revocation is final (DESIGN §2 device)');
