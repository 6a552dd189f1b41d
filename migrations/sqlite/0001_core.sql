-- IRIS approvals, core schema for SQLite (crates/store, DESIGN §2, §6, §8).
--
-- Conventions:
-- * Timestamps are RFC 3339 UTC text with a fixed precision, always written by the store as
--   `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ` (9 fractional digits, `Z`), so text order is time order and
--   `<=` compares instants.
-- * JSON values are stored as TEXT (serde_json output); `args_canonical` is the RFC 8785 text a
--   claim compares byte for byte.
-- * What must never change is refused by the database itself (triggers below), so no code path,
--   a resume included, can change what was approved (DESIGN §6).

-- ---------------------------------------------------------------------------------------------
-- The approval queue: one row per gated call. Request terms are immutable once written; the
-- response is written once; rows are never deleted.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE approvals (
    id              TEXT PRIMARY KEY NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('destructive', 'pinned_write', 'evaluator')),
    status          TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
    tool            TEXT NOT NULL,
    args            TEXT NOT NULL,
    args_canonical  TEXT NOT NULL,
    call_hash       TEXT NOT NULL,
    items           TEXT NOT NULL,
    card            TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    context_summary TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    responded_at    TEXT,
    responded_by    TEXT,
    surface         TEXT,
    reason          TEXT,
    checkpoint_id   TEXT REFERENCES checkpoints (id),
    resumed_at      TEXT,
    resume_error    TEXT
);

CREATE INDEX approvals_status_created ON approvals (status, created_at);
CREATE INDEX approvals_status_expires ON approvals (status, expires_at);
CREATE INDEX approvals_responded ON approvals (responded_at);

-- Request terms: one trigger per column so the refusal names it.
CREATE TRIGGER approvals_immutable_id BEFORE UPDATE OF id ON approvals
WHEN NEW.id IS NOT OLD.id
BEGIN SELECT RAISE(ABORT, 'approval request terms are immutable (DESIGN §2): id'); END;

CREATE TRIGGER approvals_immutable_kind BEFORE UPDATE OF kind ON approvals
WHEN NEW.kind IS NOT OLD.kind
BEGIN SELECT RAISE(ABORT, 'approval request terms are immutable (DESIGN §2): kind'); END;

CREATE TRIGGER approvals_immutable_tool BEFORE UPDATE OF tool ON approvals
WHEN NEW.tool IS NOT OLD.tool
BEGIN SELECT RAISE(ABORT, 'approval request terms are immutable (DESIGN §2): tool'); END;

CREATE TRIGGER approvals_immutable_args BEFORE UPDATE OF args ON approvals
WHEN NEW.args IS NOT OLD.args
BEGIN SELECT RAISE(ABORT, 'approval request terms are immutable (DESIGN §2): args'); END;

CREATE TRIGGER approvals_immutable_args_canonical BEFORE UPDATE OF args_canonical ON approvals
WHEN NEW.args_canonical IS NOT OLD.args_canonical
BEGIN SELECT RAISE(ABORT, 'approval request terms are immutable (DESIGN §2): args_canonical'); END;

CREATE TRIGGER approvals_immutable_call_hash BEFORE UPDATE OF call_hash ON approvals
WHEN NEW.call_hash IS NOT OLD.call_hash
BEGIN SELECT RAISE(ABORT, 'approval request terms are immutable (DESIGN §2): call_hash'); END;

CREATE TRIGGER approvals_immutable_items BEFORE UPDATE OF items ON approvals
WHEN NEW.items IS NOT OLD.items
BEGIN SELECT RAISE(ABORT, 'approval request terms are immutable (DESIGN §2): items'); END;

CREATE TRIGGER approvals_immutable_card BEFORE UPDATE OF card ON approvals
WHEN NEW.card IS NOT OLD.card
BEGIN SELECT RAISE(ABORT, 'approval request terms are immutable (DESIGN §2): card'); END;

CREATE TRIGGER approvals_immutable_run_id BEFORE UPDATE OF run_id ON approvals
WHEN NEW.run_id IS NOT OLD.run_id
BEGIN SELECT RAISE(ABORT, 'approval request terms are immutable (DESIGN §2): run_id'); END;

CREATE TRIGGER approvals_immutable_context_summary BEFORE UPDATE OF context_summary ON approvals
WHEN NEW.context_summary IS NOT OLD.context_summary
BEGIN SELECT RAISE(ABORT, 'approval request terms are immutable (DESIGN §2): context_summary'); END;

CREATE TRIGGER approvals_immutable_created_at BEFORE UPDATE OF created_at ON approvals
WHEN NEW.created_at IS NOT OLD.created_at
BEGIN SELECT RAISE(ABORT, 'approval request terms are immutable (DESIGN §2): created_at'); END;

CREATE TRIGGER approvals_immutable_expires_at BEFORE UPDATE OF expires_at ON approvals
WHEN NEW.expires_at IS NOT OLD.expires_at
BEGIN SELECT RAISE(ABORT, 'approval request terms are immutable (DESIGN §2): expires_at'); END;

-- A new row is pending and unanswered: consent is only ever written by a decision.
CREATE TRIGGER approvals_insert_pending BEFORE INSERT ON approvals
WHEN NEW.status IS NOT 'pending'
  OR NEW.responded_at IS NOT NULL OR NEW.responded_by IS NOT NULL
  OR NEW.surface IS NOT NULL OR NEW.reason IS NOT NULL OR NEW.resumed_at IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'a new approval row is pending and unanswered (DESIGN §2, §8)'); END;

-- The response is written once: after the row left `pending`, none of it changes.
CREATE TRIGGER approvals_response_written_once BEFORE UPDATE ON approvals
WHEN OLD.status IS NOT 'pending' AND (
       NEW.status IS NOT OLD.status
    OR NEW.responded_at IS NOT OLD.responded_at
    OR NEW.responded_by IS NOT OLD.responded_by
    OR NEW.surface IS NOT OLD.surface
    OR NEW.reason IS NOT OLD.reason)
BEGIN SELECT RAISE(ABORT, 'an approval response is written once (DESIGN §2)'); END;

-- While pending, the response fields move only together with the decision.
CREATE TRIGGER approvals_response_with_decision BEFORE UPDATE ON approvals
WHEN OLD.status IS 'pending' AND NEW.status IS 'pending' AND (
       NEW.responded_at IS NOT OLD.responded_at
    OR NEW.responded_by IS NOT OLD.responded_by
    OR NEW.surface IS NOT OLD.surface
    OR NEW.reason IS NOT OLD.reason)
BEGIN SELECT RAISE(ABORT, 'an approval response is written together with its decision (DESIGN §2)'); END;

-- A decision records who answered, through which surface and when.
CREATE TRIGGER approvals_decision_complete BEFORE UPDATE OF status ON approvals
WHEN OLD.status IS 'pending' AND NEW.status IS NOT 'pending' AND (
       NEW.responded_at IS NULL OR NEW.responded_by IS NULL OR NEW.surface IS NULL)
BEGIN SELECT RAISE(ABORT, 'a decision records who answered, through which surface and when (DESIGN §2)'); END;

-- The link to the paused run's checkpoint is written once.
CREATE TRIGGER approvals_checkpoint_written_once BEFORE UPDATE OF checkpoint_id ON approvals
WHEN OLD.checkpoint_id IS NOT NULL AND NEW.checkpoint_id IS NOT OLD.checkpoint_id
BEGIN SELECT RAISE(ABORT, 'an approval is linked to its checkpoint once (DESIGN §3 step 4)'); END;

-- A run resumes exactly once, and only after its approval was decided.
CREATE TRIGGER approvals_resumed_once BEFORE UPDATE OF resumed_at ON approvals
WHEN OLD.resumed_at IS NOT NULL AND NEW.resumed_at IS NOT OLD.resumed_at
BEGIN SELECT RAISE(ABORT, 'a paused run resumes exactly once (DESIGN §3 step 6)'); END;

CREATE TRIGGER approvals_resume_after_decision BEFORE UPDATE OF resumed_at ON approvals
WHEN NEW.resumed_at IS NOT NULL AND NEW.status IS 'pending'
BEGIN SELECT RAISE(ABORT, 'a paused run resumes only after its approval is decided (DESIGN §3 step 6)'); END;

-- Nothing is lost.
CREATE TRIGGER approvals_no_delete BEFORE DELETE ON approvals
BEGIN SELECT RAISE(ABORT, 'approval rows are never deleted (DESIGN §8: nothing is lost)'); END;

-- ---------------------------------------------------------------------------------------------
-- The side-effect ledger: one entry per approval, written `executing` by the claim before the
-- side effect and `executed` / `failed` after it; `unknown` after a crash. Never retried.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE ledger (
    approval_id    TEXT PRIMARY KEY NOT NULL REFERENCES approvals (id),
    tool           TEXT NOT NULL,
    args_canonical TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('executing', 'executed', 'failed', 'unknown')),
    result         TEXT,
    claimed_at     TEXT NOT NULL,
    finished_at    TEXT
);

CREATE INDEX ledger_state ON ledger (state);

-- A claim is checked against the approval row itself (DESIGN §2 "claim").
CREATE TRIGGER ledger_claim_matches_approval BEFORE INSERT ON ledger
WHEN NEW.state IS NOT 'executing' OR NOT EXISTS (
    SELECT 1 FROM approvals a
    WHERE a.id = NEW.approval_id
      AND a.status = 'approved'
      AND a.tool = NEW.tool
      AND a.args_canonical = NEW.args_canonical)
BEGIN SELECT RAISE(ABORT, 'a claim needs an approved row naming this tool and exactly these arguments (DESIGN §2 claim)'); END;

CREATE TRIGGER ledger_terms_immutable BEFORE UPDATE ON ledger
WHEN NEW.approval_id IS NOT OLD.approval_id
  OR NEW.tool IS NOT OLD.tool
  OR NEW.args_canonical IS NOT OLD.args_canonical
  OR NEW.claimed_at IS NOT OLD.claimed_at
BEGIN SELECT RAISE(ABORT, 'a ledger claim is immutable (DESIGN §2 side-effect ledger)'); END;

CREATE TRIGGER ledger_outcome_written_once BEFORE UPDATE ON ledger
WHEN OLD.state IS NOT 'executing' AND (
       NEW.state IS NOT OLD.state
    OR NEW.result IS NOT OLD.result
    OR NEW.finished_at IS NOT OLD.finished_at)
BEGIN SELECT RAISE(ABORT, 'a ledger outcome is written once (DESIGN §2 side-effect ledger, §8 at most once)'); END;

CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger
BEGIN SELECT RAISE(ABORT, 'ledger entries are never deleted (DESIGN §8: at most once)'); END;

-- ---------------------------------------------------------------------------------------------
-- The audit log: append-only.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE audit_log (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    approval_id    TEXT NOT NULL,
    kind           TEXT NOT NULL CHECK (kind IN ('decision', 'execution', 'denial', 'lapse')),
    item           TEXT,
    result         TEXT NOT NULL,
    undo_available INTEGER NOT NULL CHECK (undo_available IN (0, 1)),
    actor          TEXT NOT NULL,
    surface        TEXT,
    at             TEXT NOT NULL
);

CREATE INDEX audit_log_approval ON audit_log (approval_id, id);

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only (DESIGN §2 audit log): no update'); END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only (DESIGN §2 audit log): no delete'); END;

-- ---------------------------------------------------------------------------------------------
-- Checkpoints of paused runs: one per approval, taken for resuming exactly once.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE checkpoints (
    id              TEXT PRIMARY KEY NOT NULL,
    approval_id     TEXT NOT NULL UNIQUE REFERENCES approvals (id),
    run_id          TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    body            TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    resumed_at      TEXT
);

CREATE TRIGGER checkpoints_immutable BEFORE UPDATE ON checkpoints
WHEN NEW.id IS NOT OLD.id
  OR NEW.approval_id IS NOT OLD.approval_id
  OR NEW.run_id IS NOT OLD.run_id
  OR NEW.conversation_id IS NOT OLD.conversation_id
  OR NEW.body IS NOT OLD.body
  OR NEW.created_at IS NOT OLD.created_at
BEGIN SELECT RAISE(ABORT, 'a checkpoint is saved once and never changed (DESIGN §2 checkpoint)'); END;

CREATE TRIGGER checkpoints_resumed_once BEFORE UPDATE OF resumed_at ON checkpoints
WHEN OLD.resumed_at IS NOT NULL AND NEW.resumed_at IS NOT OLD.resumed_at
BEGIN SELECT RAISE(ABORT, 'a paused run resumes exactly once (DESIGN §3 step 6)'); END;

-- Taking a checkpoint marks its approval resumed in the same statement.
CREATE TRIGGER checkpoints_mark_approval_resumed AFTER UPDATE OF resumed_at ON checkpoints
WHEN OLD.resumed_at IS NULL AND NEW.resumed_at IS NOT NULL
BEGIN UPDATE approvals SET resumed_at = NEW.resumed_at WHERE id = NEW.approval_id; END;

CREATE TRIGGER checkpoints_no_delete BEFORE DELETE ON checkpoints
BEGIN SELECT RAISE(ABORT, 'checkpoints are never deleted (DESIGN §8: nothing is lost)'); END;

-- ---------------------------------------------------------------------------------------------
-- Conversations: the model transcript (JSON array of messages) and the lines the owner sees.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE conversations (
    id         TEXT PRIMARY KEY NOT NULL,
    transcript TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE conversation_lines (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL,
    role            TEXT NOT NULL,
    text            TEXT NOT NULL,
    approval_id     TEXT,
    created_at      TEXT NOT NULL
);

CREATE INDEX conversation_lines_conversation ON conversation_lines (conversation_id, seq);

-- ---------------------------------------------------------------------------------------------
-- Paired devices: tokens stored only as their hex SHA-256; a revoked device keeps its row.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE devices (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    name         TEXT NOT NULL,
    scope        TEXT NOT NULL CHECK (scope IN ('read', 'control')),
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at   TEXT
);

-- A name is unique among live devices (a revoked name can be paired again).
CREATE UNIQUE INDEX devices_live_name ON devices (name) WHERE revoked_at IS NULL;

CREATE TRIGGER devices_immutable BEFORE UPDATE ON devices
WHEN NEW.name IS NOT OLD.name
  OR NEW.scope IS NOT OLD.scope
  OR NEW.token_hash IS NOT OLD.token_hash
  OR NEW.created_at IS NOT OLD.created_at
  OR (OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS NOT OLD.revoked_at)
BEGIN SELECT RAISE(ABORT, 'a device keeps its name, scope and token; a revocation is final (DESIGN §2 device)'); END;
