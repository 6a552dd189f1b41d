//! A checked model of the approval lifecycle (docs/liveness.md "the checked model"), explored
//! exhaustively by [`stateright`] for a few servers and approvals with faults bounded by
//! counters.
//!
//! The model is the lifecycle as the approvals service and the store run it, one action per
//! unit of work: request (the cards start pending), decide, lapse, claim (with the job's lease
//! and epoch), confirm the lease before the side effect, the side effect, the outcome, the
//! job's end (the run resumes), the owner's retry of a failed job, the card's undo; and the
//! faults: a holder that stalls past its lease (a paused process, heartbeats that cannot
//! write), a unit that fails for good (the job is then ended `failed`, `abandon_job`), a crash
//! and a restart. What a claim does to the ledger is not written again here: every claim calls
//! the core's real planner, [`iris_core::approvals::plan::plan_claim`], on a snapshot of the
//! modelled row, so the model cannot drift from the code. What the surfaces are told is read
//! from the planner's events and from each outcome the model writes.
//!
//! The properties ([`LifecycleModel::properties`]):
//! - **at most once**: no approved call's side effect runs twice;
//! - **every decided card ends**: in every terminal state, every card is decided, an approved
//!   one's execution is `executed`, `failed` or `unknown`, and its job is over;
//! - **one story**: no surface is told two different outcomes of one call;
//! - **undo once**: an undo runs at most once, and only after the call executed.
//!
//! The state and its actions are in `state.rs`; the checker's properties and the model's
//! transitions here.
//!
//! [`Fence::Removed`] is the lifecycle without the lease fence around the outcome (the claim
//! that takes a job over reads the ledger in one step and commits in another, and the old
//! holder's outcome can land in between, as a non-locking check let it on PostgreSQL): the
//! checker must find a counterexample to "one story" there, and a test asserts it does.

use std::sync::Arc;

use async_trait::async_trait;
use iris_core::approvals::plan::plan_claim;
use iris_core::canonical::call_hash;
use iris_core::manifest::Manifest;
use iris_core::plugin::{CallContext, Description, Plugin, ToolError, ToolOutput};
use iris_core::ports::{ClaimPlan, JobOrigin, JobSnapshot, LedgerStep, SavedRun};
use iris_core::toolbox::Toolbox;
use iris_core::wire::{Approval, ApprovalStatus, Event, Execution};
use serde_json::{json, Value};
use stateright::{Model, Property};

mod state;
pub use state::{
    Action, Card, Fence, Job, Ledger, Phase, Retake, Server, State, Status, Task, Undo,
};

/// The one gated tool of the model's toolbox.
pub const TOOL: &str = "delete_file";

const MANIFEST: &str = r#"
plugin: files
tools:
  - name: delete_file
    effect: destructive
    parameters:
      type: object
      properties: {path: {type: string}}
      required: [path]
      additionalProperties: false
"#;

/// A plugin that declares [`TOOL`] and is never asked to run anything: the planner only reads
/// the registry.
struct DeclaredOnly {
    manifest: Manifest,
}

#[async_trait]
impl Plugin for DeclaredOnly {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }
    async fn normalise(&self, _: &str, args: Value, _: &CallContext) -> Result<Value, ToolError> {
        Ok(args)
    }
    async fn describe(
        &self,
        _: &str,
        _: &Value,
        _: &CallContext,
    ) -> Result<Description, ToolError> {
        Ok(Description::default())
    }
    async fn execute(&self, _: &str, _: &Value, _: &CallContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::plain(json!({})))
    }
}

/// The lifecycle with `servers` servers and `cards` approvals, faults bounded as given.
#[derive(Clone)]
pub struct LifecycleModel {
    /// Servers.
    pub servers: usize,
    /// Approvals.
    pub cards: usize,
    /// Crashes at most.
    pub crashes: u8,
    /// Stalls at most.
    pub stalls: u8,
    /// Failed-for-good units at most.
    pub faults: u8,
    /// With or without the fence.
    pub fence: Fence,
    /// Who retakes a lapsed lease.
    pub retake: Retake,
    toolbox: Arc<Toolbox>,
}

impl LifecycleModel {
    /// The model of `servers` servers and `cards` approvals, one crash, one stall and one
    /// failed unit at most, with `fence`.
    ///
    /// # Panics
    /// Never: the built-in manifest is valid.
    pub fn new(servers: usize, cards: usize, fence: Fence) -> LifecycleModel {
        let plugin = DeclaredOnly {
            manifest: Manifest::from_yaml(MANIFEST).expect("the model's manifest is valid"),
        };
        LifecycleModel {
            servers,
            cards,
            crashes: 1,
            stalls: 1,
            faults: 1,
            fence,
            retake: Retake::AnyLapsed,
            toolbox: Arc::new(Toolbox::new(vec![Arc::new(plugin)]).expect("one plugin")),
        }
    }

    /// The real planner's plan for claiming `card` as it stands (`taken_over`: a lapsed lease).
    fn plan(&self, index: usize, card: &Card, ledger: Ledger, taken_over: bool) -> ClaimPlan {
        let args = json!({"path": format!("/notes/{index}")});
        let row: Approval = serde_json::from_value(json!({
            "id": format!("card-{index}"),
            "kind": "destructive",
            "status": match card.status {
                Status::Pending => "pending",
                Status::Approved => "approved",
                Status::Rejected => "rejected",
                Status::Expired => "expired",
            },
            "tool": TOOL,
            "args": args,
            "call_hash": call_hash(TOOL, &args),
            "items": [format!("/notes/{index}")],
            "card": {"title": "Delete a note", "action": "Delete a note", "effect": "destructive",
                     "lines": [], "request": "delete it"},
            "run_id": "run",
            "created_at": "2026-12-05T00:00:00Z",
            "expires_at": "2026-12-05T01:00:00Z",
            "execution": execution(ledger).as_str(),
            "requested_by": "agent",
        }))
        .expect("the modelled row is a wire approval");
        let at = chrono::DateTime::parse_from_rfc3339("2026-12-05T00:30:00Z")
            .expect("a time")
            .with_timezone(&chrono::Utc);
        let snapshot = JobSnapshot {
            now: at,
            approval_id: row.id.clone(),
            origin: if taken_over {
                JobOrigin::TakenOver
            } else {
                JobOrigin::Fresh
            },
            approval: Ok(row),
            preconditions: Ok(Vec::new()),
            saved: SavedRun::Missing,
            conversation_id: None,
            transcript: Ok(Vec::new()),
            transcript_version: 0,
        };
        plan_claim(&self.toolbox, &snapshot, 900)
    }

    /// The claim's commit: server `s` leases card `c`'s job at the next epoch and applies the
    /// real planner's plan for the row as read with `ledger` (the read and the commit are one
    /// unit with the fence, two without).
    fn commit_claim(
        &self,
        state: &mut State,
        s: usize,
        c: usize,
        ledger: Ledger,
        taken_over: bool,
    ) {
        let plan = self.plan(c, &state.cards[c], ledger, taken_over);
        let card = &mut state.cards[c];
        card.epoch += 1;
        card.job = Job::Running {
            holder: s,
            epoch: card.epoch,
            lapsed: false,
        };
        let phase = LifecycleModel::apply(card, &plan);
        state.servers[s].task = Some(Task {
            card: c,
            epoch: card.epoch,
            phase,
        });
    }

    /// Whether no action is possible in `state`.
    pub fn is_terminal(&self, state: &State) -> bool {
        let mut actions = Vec::new();
        self.actions(state, &mut actions);
        actions.is_empty()
    }

    /// Applies a claim's plan to `card` (the ledger step by compare-and-set, as the store
    /// does) and returns the task's next phase.
    fn apply(card: &mut Card, plan: &ClaimPlan) -> Phase {
        for event in plan.outbox.events() {
            if let Event::ApprovalResponded(row) = event {
                if let Some(outcome) = outcome_of(row.execution) {
                    tell(card, outcome);
                }
            }
        }
        match &plan.ledger {
            LedgerStep::Claim { .. } if card.ledger == Ledger::None => {
                card.ledger = Ledger::Executing;
                Phase::Claimed
            }
            LedgerStep::Refuse { .. } if card.ledger == Ledger::None => {
                card.ledger = Ledger::Failed;
                Phase::Written
            }
            LedgerStep::MarkUnknown { .. } => {
                if card.ledger == Ledger::Executing {
                    card.ledger = Ledger::Unknown;
                }
                Phase::Written
            }
            _ => Phase::Written,
        }
    }
}

fn execution(ledger: Ledger) -> Execution {
    match ledger {
        Ledger::None => Execution::None,
        Ledger::Executing => Execution::Executing,
        Ledger::Executed => Execution::Executed,
        Ledger::Failed => Execution::Failed,
        Ledger::Unknown => Execution::Unknown,
    }
}

fn outcome_of(execution: Execution) -> Option<Ledger> {
    match execution {
        Execution::Executed => Some(Ledger::Executed),
        Execution::Failed => Some(Ledger::Failed),
        Execution::Unknown => Some(Ledger::Unknown),
        _ => None,
    }
}

/// Records that a surface was told `outcome` of `card`.
fn tell(card: &mut Card, outcome: Ledger) {
    if !card.told.contains(&outcome) {
        card.told.push(outcome);
        card.told.sort();
    }
}

/// Whether `card` has ended (docs/liveness.md): decided, an approved call's outcome known to
/// be `executed`, `failed` or `unknown`, its job over.
pub fn ended(card: &Card) -> bool {
    let decided = card.status != Status::Pending;
    let outcome = card.status != Status::Approved
        || matches!(
            card.ledger,
            Ledger::Executed | Ledger::Failed | Ledger::Unknown
        );
    let job_over = matches!(card.job, Job::Done | Job::Failed);
    decided && outcome && job_over
}

impl Model for LifecycleModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let card = Card {
            status: Status::Pending,
            ledger: Ledger::None,
            job: Job::None,
            epoch: 0,
            effects: 0,
            told: Vec::new(),
            undo: Undo::None,
            undo_runs: 0,
            resumes: 0,
        };
        vec![State {
            cards: vec![card; self.cards],
            servers: vec![
                Server {
                    up: true,
                    task: None
                };
                self.servers
            ],
            crashes_left: self.crashes,
            stalls_left: self.stalls,
            faults_left: self.faults,
        }]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        for (c, card) in state.cards.iter().enumerate() {
            if card.status == Status::Pending {
                actions.push(Action::Decide(c, true));
                actions.push(Action::Decide(c, false));
                actions.push(Action::Lapse(c));
            }
            if let Job::Running { lapsed: false, .. } = card.job {
                if state.stalls_left > 0 {
                    actions.push(Action::Stall(c));
                }
            }
            if card.status == Status::Approved
                && card.ledger == Ledger::Executed
                && card.undo == Undo::None
            {
                actions.push(Action::Undo(c));
            }
            if card.undo == Undo::Running {
                actions.push(Action::UndoEnd(c));
            }
        }
        for (s, server) in state.servers.iter().enumerate() {
            if !server.up {
                actions.push(Action::Restart(s));
                continue;
            }
            if state.crashes_left > 0 {
                actions.push(Action::Crash(s));
            }
            match server.task {
                None => {
                    for (c, card) in state.cards.iter().enumerate() {
                        // Any server takes over a lapsed lease, its own included once no task
                        // of its own holds it (this server has none now).
                        let claimable = match card.job {
                            Job::Ready => true,
                            Job::Running {
                                lapsed: true,
                                holder,
                                ..
                            } => self.retake == Retake::AnyLapsed || holder != s,
                            _ => false,
                        };
                        let claiming = state.servers.iter().any(|o| {
                            matches!(o.task, Some(Task { card: oc, phase: Phase::Claiming { .. }, .. }) if oc == c)
                        });
                        if claimable && !claiming {
                            actions.push(Action::Claim(s, c, false));
                        }
                        if card.job == Job::Failed {
                            actions.push(Action::Claim(s, c, true));
                        }
                    }
                }
                Some(task) => {
                    actions.push(match task.phase {
                        Phase::Claiming { .. } => Action::CommitClaim(s),
                        Phase::Claimed => Action::Confirm(s),
                        Phase::Confirmed => Action::SideEffect(s),
                        Phase::EffectDone => Action::WriteOutcome(s),
                        Phase::Written => Action::Finish(s),
                    });
                    if state.faults_left > 0 && !matches!(task.phase, Phase::Claiming { .. }) {
                        actions.push(Action::UnitFault(s));
                    }
                }
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut state = last.clone();
        match action {
            Action::Decide(c, approve) => {
                let card = &mut state.cards[c];
                let to = if approve {
                    ApprovalStatus::Approved
                } else {
                    ApprovalStatus::Rejected
                };
                if !iris_core::approval::can_move(ApprovalStatus::Pending, to) {
                    return None;
                }
                card.status = if approve {
                    Status::Approved
                } else {
                    Status::Rejected
                };
                card.job = Job::Ready;
            }
            Action::Lapse(c) => {
                let card = &mut state.cards[c];
                card.status = Status::Expired;
                card.job = Job::Ready;
            }
            Action::Claim(s, c, _retry) => {
                let taken_over = matches!(state.cards[c].job, Job::Running { .. });
                if self.fence == Fence::Removed && taken_over {
                    // Read now, commit later: the old holder's outcome may land in between.
                    let snapshot = state.cards[c].ledger;
                    state.servers[s].task = Some(Task {
                        card: c,
                        epoch: 0,
                        phase: Phase::Claiming {
                            snapshot,
                            taken_over,
                        },
                    });
                } else {
                    let ledger = state.cards[c].ledger;
                    self.commit_claim(&mut state, s, c, ledger, taken_over);
                }
            }
            Action::CommitClaim(s) => {
                let task = state.servers[s].task?;
                let Phase::Claiming {
                    snapshot,
                    taken_over,
                } = task.phase
                else {
                    return None;
                };
                self.commit_claim(&mut state, s, task.card, snapshot, taken_over);
            }
            Action::Confirm(s) => {
                let task = state.servers[s].task?;
                let card = &mut state.cards[task.card];
                let holds = matches!(card.job, Job::Running { holder, epoch, .. } if holder == s && epoch == task.epoch);
                let live = matches!(card.job, Job::Running { lapsed: false, .. });
                if self.fence == Fence::Removed || (holds && live) {
                    state.servers[s].task = Some(Task {
                        phase: Phase::Confirmed,
                        ..task
                    });
                } else if holds && card.ledger == Ledger::Executing {
                    // Lapsed but not taken: the call is not started, and says so.
                    card.ledger = Ledger::Failed;
                    tell(card, Ledger::Failed);
                    state.servers[s].task = Some(Task {
                        phase: Phase::Written,
                        ..task
                    });
                } else {
                    state.servers[s].task = None;
                }
            }
            Action::SideEffect(s) => {
                let task = state.servers[s].task?;
                state.cards[task.card].effects += 1;
                state.servers[s].task = Some(Task {
                    phase: Phase::EffectDone,
                    ..task
                });
            }
            Action::WriteOutcome(s) => {
                let task = state.servers[s].task?;
                let card = &mut state.cards[task.card];
                let holds = matches!(card.job, Job::Running { epoch, .. } if epoch == task.epoch);
                if holds && card.ledger == Ledger::Executing {
                    card.ledger = Ledger::Executed;
                    tell(card, Ledger::Executed);
                    state.servers[s].task = Some(Task {
                        phase: Phase::Written,
                        ..task
                    });
                } else {
                    state.servers[s].task = None;
                }
            }
            Action::Finish(s) => {
                let task = state.servers[s].task?;
                let card = &mut state.cards[task.card];
                if matches!(card.job, Job::Running { epoch, .. } if epoch == task.epoch) {
                    card.job = Job::Done;
                    card.resumes += 1;
                }
                state.servers[s].task = None;
            }
            Action::UnitFault(s) => {
                let task = state.servers[s].task?;
                state.faults_left -= 1;
                let card = &mut state.cards[task.card];
                // abandon_job: fenced by the epoch; `executing` becomes `unknown`.
                if self.retake == Retake::OthersOnly {
                    // The job stays `running`; its lease lapses.
                    if let Job::Running { holder, epoch, .. } = card.job {
                        card.job = Job::Running {
                            holder,
                            epoch,
                            lapsed: true,
                        };
                    }
                } else if matches!(card.job, Job::Running { epoch, .. } if epoch == task.epoch) {
                    card.job = Job::Failed;
                    if card.ledger == Ledger::Executing {
                        card.ledger = Ledger::Unknown;
                        tell(card, Ledger::Unknown);
                    }
                }
                state.servers[s].task = None;
            }
            Action::Stall(c) => {
                state.stalls_left -= 1;
                if let Job::Running { holder, epoch, .. } = state.cards[c].job {
                    state.cards[c].job = Job::Running {
                        holder,
                        epoch,
                        lapsed: true,
                    };
                }
            }
            Action::Crash(s) => {
                state.crashes_left -= 1;
                state.servers[s].up = false;
                if let Some(task) = state.servers[s].task.take() {
                    // Its lease runs out: the job is claimable again.
                    if let Job::Running { holder, epoch, .. } = state.cards[task.card].job {
                        state.cards[task.card].job = Job::Running {
                            holder,
                            epoch,
                            lapsed: true,
                        };
                    }
                }
            }
            Action::Restart(s) => state.servers[s].up = true,
            Action::Undo(c) => state.cards[c].undo = Undo::Running,
            Action::UndoEnd(c) => {
                state.cards[c].undo_runs += 1;
                state.cards[c].undo = Undo::Done;
            }
        }
        Some(state)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("at most once", |_, state: &State| {
                state.cards.iter().all(|c| c.effects <= 1)
            }),
            Property::always(
                "every decided card ends",
                |model: &LifecycleModel, state: &State| {
                    !model.is_terminal(state) || state.cards.iter().all(ended)
                },
            ),
            Property::always("one story", |_, state: &State| {
                state.cards.iter().all(|c| c.told.len() <= 1)
            }),
            Property::always("undo once, after an execution", |_, state: &State| {
                state
                    .cards
                    .iter()
                    .all(|c| c.undo_runs <= 1 && (c.undo == Undo::None || c.effects == 1))
            }),
            Property::sometimes("a card executes", |_, state: &State| {
                state.cards.iter().any(|c| c.ledger == Ledger::Executed)
            }),
        ]
    }
}
