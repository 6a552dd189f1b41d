//! Failpoints for crash tests (side-effect ledger): named points on the execution path
//! where a test can stop the process to prove that a pinned call is never repeated after a
//! crash.
//!
//! **Test-only.** The setting is the environment variable `IRIS_FAILPOINT=NAME`, read only in
//! debug builds (`cfg(debug_assertions)`); in a release build [`hit`] compiles to nothing and the
//! variable is ignored. When the point named by the setting is reached, the process prints
//! `failpoint reached: NAME` on stderr and then blocks that thread forever, so the test kills it
//! with SIGKILL at exactly that point (from the ledger's point of view, a real crash).
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
