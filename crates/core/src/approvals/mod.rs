//! The approvals service: the one owner of an approval's whole life (DESIGN §8, §9). Every
//! surface (the JSON API, the web app's server functions, Telegram, the CLI through the API, the
//! sweeps) calls this service and nothing else; no surface starts a resume.
//!
//! | phase | here | store unit (one commit each) |
//! |---|---|---|
//! | request | [`turn`]: the loop runs; a pinned call ends the turn with its card | `commit_turn` (row + checkpoint + link + transcript + lines) |
//! | respond | [`respond`]: scope, the state machine, the owner's choice of items ([`narrow`]) or edit ([`edit`]), compare-and-set | `commit_decision` (decision + audit + resume job) |
//! | reason | [`reason`]: a rejection's reason given after the tap, once; the model told in the card's conversation | `add_reason` |
//! | expire | [`respond`]: the sweep's lapse, same unit | `commit_decision` |
//! | execute | [`execute`]: claim under a lease, the side effect, its outcome | `claim_job` (lease + ledger `executing`), `record_outcome` |
//! | resume | [`resume`]: the run continues from the real result | `finish_job` |
//! | retry, recover | [`resume`]: a failed job on the owner's request; a lapsed lease by any server | `claim_job` |
//! | locate | [`locate`]: after a takeover made a call `unknown`, where its items are now (the plugin's `locate`) | `record_located` |
//! | undo | [`undo`]: the card's undo tool for the items that ran (or were located), once | `claim_undo`, `record_undo` |
//! | gateway | [`gateway`]: an MCP agent's gated call is a row (or attaches to the same call's); its job executes on the upstream, no run to resume | `GatewayStore::request`, then as above |
//!
//! A decided row is a durable resume job. Any server claims it under a lease (owner, epoch,
//! until), keeps it by heartbeats, and every write under it is fenced by the epoch, so a server
//! that stalls or dies loses the job to another, whose writes win. A taker that finds the ledger
//! `executing` with no outcome marks it `unknown`, tells the owner, asks the tool's plugin where
//! its items are now ([`locate`]), and never runs it again.
//!
//! What decides is in code ([`crate::approval::can_move`], [`plan`]); the store's
//! compare-and-set statements and the database's triggers are the second line.
//!
//! The rule for reads: a surface reads rows, pages, the audit and conversations straight from
//! the store's read ports ([`crate::ports::ApprovalStore::approval`], `approval_page`, `audit`,
//! `lines`, …), which change nothing and decide nothing; a read that judges a row (may it be
//! answered, undone, retried? has it lapsed?) goes through this service or a rule it owns
//! ([`crate::wire::Approval::lapsed_at`], [`crate::wire::Approval::undo_offered`]), never a
//! comparison of the surface's own. Every change, without exception, goes through this service.

pub mod edit;
pub mod execute;
pub mod gateway;
pub mod locate;
pub mod narrow;
pub mod overlap;
pub mod passkey;
pub mod plan;
pub mod reason;
pub mod respond;
pub mod resume;
pub mod turn;
pub mod undo;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::agent::Agent;
use crate::escalation::{CuratorStore, EscalationMode, Judge};
use crate::ports::{ApprovalStore, Clock, Scope, StoreError};
use crate::wire::{Approval, Surface};

pub use gateway::{AgentCall, GatewayAnswer, GatewayError, GatewaySettings, MAX_WAITING_PER_AGENT};
pub use passkey::{PasskeyChallenge, PasskeySettings};
pub use respond::{RespondError, Shaping};
pub use resume::RetryError;
pub use turn::{chat_message, ChatError, Turns, MAX_MESSAGE_CHARS};
pub use undo::UndoError;

/// The paused call's observation when its approval lapsed (DESIGN §3 step 9).
pub const LAPSED: &str = "the approval lapsed; nothing was changed";

pub use crate::wire::UNKNOWN_OUTCOME;

/// [`UNKNOWN_OUTCOME`] with how to check it, when the tool's plugin says
/// ([`crate::plugin::Plugin::how_to_check`]).
pub(crate) fn unknown_outcome(check: Option<&str>) -> String {
    match check {
        Some(check) => format!("{UNKNOWN_OUTCOME}. To check: {check}"),
        None => UNKNOWN_OUTCOME.to_string(),
    }
}

/// What a stale item's result and audit entry say (staleness: the item changed after the card).
pub const STALE: &str = "it changed since you saw it";

/// Who answers, and through which surface (checked by [`ApprovalService::respond`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// Device name (e.g. `owner-browser`, `phone`, `cli`).
    pub name: String,
    /// The device's scope: only `control` may answer (DESIGN §2 "device, scope").
    pub scope: Scope,
    /// Where the answer comes from.
    pub surface: Surface,
}

/// The name IRIS itself records as the actor of what no person did (a lapse, an undo its
/// server stopped in, the executor's audit entries).
pub const IRIS_ACTOR: &str = "iris";

impl Actor {
    /// IRIS itself, through the `sweep` surface: the one actor of the expiry and undo sweeps.
    pub fn sweep() -> Actor {
        Actor {
            name: IRIS_ACTOR.into(),
            scope: Scope::Control,
            surface: Surface::Sweep,
        }
    }

    /// The one control-scope check (DESIGN §2 "device, scope"): `Ok` when this actor's device
    /// may change state; else [`NotControl`] naming the device and `action` ("answer
    /// approvals", "undo a card"). Every operation of the service that changes state asks it
    /// first; a surface maps the refusal to its own "not allowed" (HTTP 403).
    ///
    /// # Errors
    /// [`NotControl`] for a device of any other scope.
    pub fn require_control(&self, action: &'static str) -> Result<(), NotControl> {
        if self.scope == Scope::Control {
            Ok(())
        } else {
            Err(NotControl {
                device: self.name.clone(),
                action,
            })
        }
    }
}

/// A device without control scope asked for what only a control device may do
/// ([`Actor::require_control`]); nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("device `{device}` has read scope; only a control device may {action}")]
pub struct NotControl {
    /// The device's name.
    pub device: String,
    /// What it asked to do, as the sentence says it ("answer approvals").
    pub action: &'static str,
}

/// What the service needs from the runtime it lives in (the server's tokio): waking the job
/// worker and the heartbeat's pace. The service never spawns anything itself.
pub trait JobRuntime: Send + Sync {
    /// A resume job is ready: wake the worker loop, which claims it (never runs it on the
    /// caller's task, so no surface resumes a run).
    fn job_ready(&self);

    /// A future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// Leases on resume jobs (DESIGN §9) and the bounds that make every decided card end
/// (docs/liveness.md): a lease's length, a side effect's deadline, the last moment an approved
/// call may start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseSettings {
    /// This server's id (random per process).
    pub owner: String,
    /// How long a lease lasts without a heartbeat, in seconds (`IRIS_LEASE_SECS`).
    pub secs: u32,
    /// The deadline of one side effect, in seconds (`IRIS_EXECUTE_TIMEOUT_SECS`, default 120):
    /// without an answer by then its outcome is `unknown`.
    pub execute_timeout_secs: u64,
    /// Seconds after a card's expiry after which its approved call is not started any more
    /// (`IRIS_EXECUTE_GRACE_SECS`, default 900).
    pub execute_grace_secs: u64,
}

/// The default of [`LeaseSettings::execute_timeout_secs`].
pub const EXECUTE_TIMEOUT_SECS: u64 = 120;
/// The default of [`LeaseSettings::execute_grace_secs`].
pub const EXECUTE_GRACE_SECS: u64 = 900;

impl LeaseSettings {
    /// A lease owner id for this process, with `secs` seconds per lease and the default
    /// execution bounds.
    pub fn for_this_process(secs: u32) -> LeaseSettings {
        LeaseSettings {
            owner: format!("iris-{}", uuid::Uuid::new_v4().simple()),
            secs: secs.max(1),
            execute_timeout_secs: EXECUTE_TIMEOUT_SECS,
            execute_grace_secs: EXECUTE_GRACE_SECS,
        }
    }

    /// These settings with a side effect's deadline of `timeout_secs` (at least 1) and a start
    /// grace of `grace_secs` after a card's expiry.
    pub fn with_execution_bounds(mut self, timeout_secs: u64, grace_secs: u64) -> LeaseSettings {
        self.execute_timeout_secs = timeout_secs.max(1);
        self.execute_grace_secs = grace_secs;
        self
    }

    /// How long a unit that failed (a dropped connection) is retried before the job is given
    /// up: the lease's length, so a retried write never outlives the lease by much.
    pub fn retry_budget(&self) -> Duration {
        Duration::from_secs(u64::from(self.secs))
    }

    /// How often a held lease is renewed: a third of its length.
    pub fn heartbeat(&self) -> Duration {
        Duration::from_millis(u64::from(self.secs) * 1000 / 3)
    }
}

/// The judge that reviews finished turns (DESIGN §2 "escalation"), for every chat surface.
#[derive(Clone)]
pub struct EscalationSettings {
    /// Off, shadow or enforce.
    pub mode: EscalationMode,
    /// Who gives verdicts.
    pub judge: Arc<dyn Judge>,
    /// Where verdicts are recorded.
    pub curator: Arc<dyn CuratorStore>,
    /// At most this many re-runs per owner turn.
    pub max_hops: u32,
}

/// The approvals service. Cheap to share behind an `Arc`.
pub struct ApprovalService {
    store: Arc<dyn ApprovalStore>,
    agent: Arc<Agent>,
    turns: Arc<Turns>,
    clock: Arc<dyn Clock>,
    leases: LeaseSettings,
    escalation: Option<EscalationSettings>,
    runtime: Arc<dyn JobRuntime>,
    passkeys: Option<PasskeySettings>,
    gateway: Option<GatewaySettings>,
    /// The leases this server's own tasks hold now (`OWNER#CLAIM`): never taken over here,
    /// whatever their `lease_until` says; any other lapsed lease is (docs/liveness.md).
    busy: std::sync::Mutex<Vec<String>>,
}

impl ApprovalService {
    /// A service over `store`, continuing runs with `agent`, stamping rows with `clock`.
    pub fn new(
        store: Arc<dyn ApprovalStore>,
        agent: Arc<Agent>,
        clock: Arc<dyn Clock>,
        leases: LeaseSettings,
        runtime: Arc<dyn JobRuntime>,
    ) -> ApprovalService {
        let turns = Arc::new(Turns::new(store.clone(), agent.clone()));
        ApprovalService {
            store,
            agent,
            turns,
            clock,
            leases,
            escalation: None,
            runtime,
            passkeys: None,
            gateway: None,
            busy: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Asks for and checks the owner's passkey on cards that need one (none by default: such a
    /// card can then only be rejected; ADR-0118 decision 4).
    pub fn with_passkeys(mut self, passkeys: PasskeySettings) -> ApprovalService {
        self.passkeys = Some(passkeys);
        self
    }

    /// Reviews every finished chat turn with `escalation` (none by default).
    pub fn with_escalation(mut self, escalation: EscalationSettings) -> ApprovalService {
        if escalation.mode != EscalationMode::Off {
            self.escalation = Some(escalation);
        }
        self
    }

    /// The agent whose runs this service pauses and continues.
    pub fn agent(&self) -> &Arc<Agent> {
        &self.agent
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn ApprovalStore> {
        &self.store
    }

    /// One row, with its execution state.
    ///
    /// # Errors
    /// [`StoreError`].
    pub async fn approval(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        self.store.approval(id).await
    }

    /// The lease settings (the worker's pace).
    pub fn leases(&self) -> &LeaseSettings {
        &self.leases
    }
}
