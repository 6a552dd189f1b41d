//! The model's state and actions: cards (decision, ledger, job, what was told), servers (up,
//! the task they hold), the fault budgets, and one action per unit of work or fault.

/// Whether the outcome is fenced by the lease (the code as it is) or not (the counterexample).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fence {
    /// A claim is one unit that locks the job row; the outcome unit locks it too and lands only
    /// at its epoch; the holder confirms its lease right before the side effect.
    Kept,
    /// A takeover reads in one step and commits in another, with the old holder's outcome
    /// allowed in between; no confirmation before the side effect.
    Removed,
}

/// How a server treats a job its own task left behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Retake {
    /// The code as it is: a task whose unit fails for good ends the job `failed`, and any
    /// server, its own included, takes over a lapsed lease no task of its own holds.
    AnyLapsed,
    /// The counterexample: a failed unit leaves the job `running`, and a server never takes
    /// over a lease of its own.
    OthersOnly,
}

/// A card's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Waiting for the owner.
    Pending,
    /// Approved.
    Approved,
    /// Rejected.
    Rejected,
    /// Lapsed unanswered.
    Expired,
}

/// The side-effect ledger's entry of a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ledger {
    /// Not claimed.
    None,
    /// Claimed, outcome not written.
    Executing,
    /// Ran.
    Executed,
    /// Did not run.
    Failed,
    /// May or may not have run; never run again.
    Unknown,
}

/// A card's resume job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Job {
    /// No decision yet.
    None,
    /// Decided, not claimed.
    Ready,
    /// Claimed by `holder` at `epoch`; `lapsed` once its lease ran out.
    Running {
        /// The server.
        holder: usize,
        /// The claim's epoch.
        epoch: u8,
        /// Whether the lease lapsed.
        lapsed: bool,
    },
    /// The run resumed and ended.
    Done,
    /// Ended `failed` (the owner may retry).
    Failed,
}

/// The card's undo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Undo {
    /// Not asked for.
    None,
    /// Claimed, running.
    Running,
    /// Ended.
    Done,
}

/// One card.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Card {
    /// The decision.
    pub status: Status,
    /// The ledger entry.
    pub ledger: Ledger,
    /// The resume job.
    pub job: Job,
    /// The job's latest epoch.
    pub epoch: u8,
    /// How many times the call's side effect ran.
    pub effects: u8,
    /// Every outcome any surface was told, sorted, each once.
    pub told: Vec<Ledger>,
    /// The undo.
    pub undo: Undo,
    /// How many times the undo's side effect ran.
    pub undo_runs: u8,
    /// How many times the paused run continued.
    pub resumes: u8,
}

/// Where a server's task on a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// ([`Fence::Removed`] only) the claim read the job, ledger `snapshot`, not yet committed.
    Claiming {
        /// The ledger as the claim read it.
        snapshot: Ledger,
        /// How the job stood.
        taken_over: bool,
    },
    /// Claimed: the ledger says `executing`, nothing ran.
    Claimed,
    /// The lease was confirmed right before the side effect.
    Confirmed,
    /// The side effect ran; its outcome is not written.
    EffectDone,
    /// The outcome is written (or there was none to write); the run may continue.
    Written,
}

/// A server's task on one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Task {
    /// The card.
    pub card: usize,
    /// The epoch it holds.
    pub epoch: u8,
    /// Where it is.
    pub phase: Phase,
}

/// One server.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Server {
    /// Running.
    pub up: bool,
    /// The job one of its tasks holds (one at a time in the model).
    pub task: Option<Task>,
}

/// The whole system.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State {
    /// The cards.
    pub cards: Vec<Card>,
    /// The servers.
    pub servers: Vec<Server>,
    /// Crashes left to inject.
    pub crashes_left: u8,
    /// Stalls past a lease left to inject.
    pub stalls_left: u8,
    /// Units that fail for good left to inject.
    pub faults_left: u8,
}

/// One step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// The owner answers card `.0` (approve when `.1`).
    Decide(usize, bool),
    /// Card `.0` lapses unanswered.
    Lapse(usize),
    /// Server `.0` claims card `.1`'s job (a fresh one, a lapsed lease, or, `.2`, the owner's
    /// retry of a failed one).
    Claim(usize, usize, bool),
    /// ([`Fence::Removed`]) server `.0` commits the claim it read.
    CommitClaim(usize),
    /// Server `.0` confirms its lease before the side effect.
    Confirm(usize),
    /// Server `.0` runs the side effect.
    SideEffect(usize),
    /// Server `.0` writes the outcome.
    WriteOutcome(usize),
    /// Server `.0` ends the job (the run continued).
    Finish(usize),
    /// Server `.0`'s next unit fails for good: its job is ended `failed`.
    UnitFault(usize),
    /// Card `.0`'s holder stalls past its lease.
    Stall(usize),
    /// Server `.0` is killed.
    Crash(usize),
    /// Server `.0` starts again.
    Restart(usize),
    /// The owner undoes card `.0` (claimed).
    Undo(usize),
    /// Card `.0`'s undo runs and ends.
    UndoEnd(usize),
}
