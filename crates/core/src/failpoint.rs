//! Failpoints for crash tests (side-effect ledger): named points on the execution path
//! where a test can stop the process to prove that a pinned call is never repeated after a
//! crash.
//!
//! **Test-only.** Four kinds, and a skewed wall clock (`IRIS_FAILPOINT_CLOCK_SKEW_SECS`,
//! [`wall_clock`]), each an environment variable read only in debug builds
//! (`cfg(debug_assertions)`); in a release build every function here compiles to nothing and the
//! variables are ignored:
//!
//! - `IRIS_FAILPOINT=NAME` (a crash): when the point is reached, the process prints
//!   `failpoint reached: NAME` on stderr and then blocks that thread forever, so the test kills it
//!   with SIGKILL at exactly that point (from the ledger's point of view, a real crash).
//! - `IRIS_FAILPOINT_PAUSE=NAME` (a stall): at the point the task prints `failpoint paused: NAME`
//!   and waits, without blocking its thread, until the file named by `IRIS_FAILPOINT_RELEASE`
//!   exists (the test creates it), then goes on: a holder that stalls past its lease.
//! - `IRIS_FAILPOINT_FAIL_ONCE=UNIT[,UNIT…]` (a store error): the first time the named store unit
//!   runs it fails before writing anything, as a dropped connection would
//!   (`failpoint failed once: UNIT` on stderr); later runs succeed. The unit names are
//!   [`FAIL_UNITS`].
//! - `IRIS_FAILPOINT_LOSE_ONCE=UNIT[,UNIT…]` (a lost answer): the first time the named store
//!   unit runs it commits and then fails, as a connection dropped between the commit and its
//!   answer would (`failpoint lost its answer once: UNIT` on stderr), so the caller retries a
//!   unit that already landed. The unit names are [`FAIL_UNITS`].
//!
//! The points, in execution order:
//! - [`AFTER_DECISION`]: the decision is stored, the resume not yet started (respond path);
//! - [`AFTER_CLAIM`]: the ledger says `executing`, the side effect has not run;
//! - [`AFTER_SIDE_EFFECT`]: the plugin ran, its outcome is not yet written;
//! - [`AFTER_OUTCOME`]: the ledger says `executed`/`failed`, the run not yet continued.

/// The decision is stored; resuming has not started.
pub const AFTER_DECISION: &str = "after_decision";
/// The ledger says `executing`; the side effect has not run.
pub const AFTER_CLAIM: &str = "after_claim";
/// The plugin executed; its outcome is not yet written to the ledger.
pub const AFTER_SIDE_EFFECT: &str = "after_side_effect";
/// The ledger holds the outcome; the run has not continued (the model not yet called).
pub const AFTER_OUTCOME: &str = "after_outcome";

/// The store units a test can make fail once (`IRIS_FAILPOINT_FAIL_ONCE`).
pub const FAIL_UNITS: &[&str] = &[
    "claim_job",
    "confirm_lease",
    "heartbeat",
    "record_outcome",
    "finish_job",
];

/// Before the side effect, after the claim and before the plugin's lock, the preconditions and
/// the lease's confirmation: where a stalled holder pauses (`IRIS_FAILPOINT_PAUSE`).
pub const BEFORE_SIDE_EFFECT: &str = "before_side_effect";

/// Inside the decision's unit, after the row was read and the plan made, before its
/// compare-and-set: where an answer pauses so the card's expiry can pass meanwhile
/// (`IRIS_FAILPOINT_PAUSE`).
pub const DECISION_READ: &str = "decision_read";

/// Whether the store unit `unit` must fail this time (`IRIS_FAILPOINT_FAIL_ONCE` names it and it
/// has not failed yet). Always `false` in release builds.
pub fn fail_once(unit: &str) -> bool {
    #[cfg(debug_assertions)]
    {
        static LEFT: std::sync::OnceLock<std::sync::Mutex<Vec<String>>> =
            std::sync::OnceLock::new();
        if take_once(&LEFT, "IRIS_FAILPOINT_FAIL_ONCE", unit) {
            eprintln!("failpoint failed once: {unit}");
            return true;
        }
    }
    let _ = unit;
    false
}

/// Whether the store unit `unit`, which has just committed, must report a failure this time
/// (`IRIS_FAILPOINT_LOSE_ONCE` names it and it has not yet): its answer is lost. Always `false`
/// in release builds.
pub fn lose_once(unit: &str) -> bool {
    #[cfg(debug_assertions)]
    {
        static LEFT: std::sync::OnceLock<std::sync::Mutex<Vec<String>>> =
            std::sync::OnceLock::new();
        if take_once(&LEFT, "IRIS_FAILPOINT_LOSE_ONCE", unit) {
            eprintln!("failpoint lost its answer once: {unit}");
            return true;
        }
    }
    let _ = unit;
    false
}

/// Removes `unit` from the list the setting `variable` names (read once into `left`): whether
/// it was there.
#[cfg(debug_assertions)]
fn take_once(
    left: &std::sync::OnceLock<std::sync::Mutex<Vec<String>>>,
    variable: &str,
    unit: &str,
) -> bool {
    let left = left.get_or_init(|| {
        std::sync::Mutex::new(
            std::env::var(variable)
                .unwrap_or_default()
                .split(',')
                .map(|u| u.trim().to_string())
                .filter(|u| !u.is_empty())
                .collect(),
        )
    });
    let mut left = left
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match left.iter().position(|u| u == unit) {
        Some(i) => {
            left.remove(i);
            true
        }
        None => false,
    }
}

/// The wall clock a server starts from: the system's, moved by `IRIS_FAILPOINT_CLOCK_SKEW_SECS`
/// seconds in debug builds (a test's machine whose clock runs ahead or behind the database's);
/// always the system's in release builds.
pub fn wall_clock() -> std::sync::Arc<dyn crate::ports::Clock> {
    #[cfg(debug_assertions)]
    {
        if let Some(secs) = std::env::var("IRIS_FAILPOINT_CLOCK_SKEW_SECS")
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
        {
            eprintln!("failpoint skews the wall clock: {secs} s");
            return std::sync::Arc::new(SkewedClock(chrono::Duration::seconds(secs)));
        }
    }
    std::sync::Arc::new(crate::ports::SystemClock)
}

/// The system clock moved by a fixed amount (test-only, [`wall_clock`]).
#[cfg(debug_assertions)]
struct SkewedClock(chrono::Duration);

#[cfg(debug_assertions)]
impl crate::ports::Clock for SkewedClock {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::Utc::now() + self.0
    }
}

/// Whether `IRIS_FAILPOINT_PAUSE` names `name` (debug builds only). The caller then awaits
/// [`released`] on its own runtime.
pub fn pauses_at(name: &str) -> bool {
    #[cfg(debug_assertions)]
    {
        static SETTING: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
        let setting = SETTING.get_or_init(|| std::env::var("IRIS_FAILPOINT_PAUSE").ok());
        if setting.as_deref() == Some(name) {
            eprintln!("failpoint paused: {name}");
            return true;
        }
    }
    let _ = name;
    false
}

/// Whether the paused point may go on: the file `IRIS_FAILPOINT_RELEASE` names exists (always
/// `true` without the setting).
pub fn released() -> bool {
    match std::env::var_os("IRIS_FAILPOINT_RELEASE") {
        Some(path) => std::path::Path::new(&path).exists(),
        None => true,
    }
}

/// Reaches the failpoint `name`: when `IRIS_FAILPOINT` names it (debug builds only), prints
/// `failpoint reached: NAME` on stderr and blocks the calling thread forever (the test then
/// kills the process). Otherwise, and always in release builds, does nothing.
#[inline]
pub fn hit(name: &str) {
    #[cfg(debug_assertions)]
    {
        static SETTING: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
        let setting = SETTING.get_or_init(|| std::env::var("IRIS_FAILPOINT").ok());
        if setting.as_deref() == Some(name) {
            use std::io::Write;
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "failpoint reached: {name}");
            let _ = err.flush();
            drop(err);
            loop {
                std::thread::park();
            }
        }
    }
    #[cfg(not(debug_assertions))]
    let _ = name;
}
