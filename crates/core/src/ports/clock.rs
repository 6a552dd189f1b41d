//! The time source (DESIGN §9: the store compares against the database's clock in production;
//! tests move a [`ManualClock`] and bind it instead).

use chrono::{DateTime, Utc};

/// The time source. Tests control it (expiry, sweeps).
pub trait Clock: Send + Sync {
    /// Now, UTC.
    fn now(&self) -> DateTime<Utc>;
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that moves only when told to: for tests and simulations (expiry, sweeps, TTLs),
/// never for a running server (which uses [`SystemClock`]). Share it as `Arc<ManualClock>`
/// and hand clones to the kernel as `Arc<dyn Clock>`; [`ManualClock::set`] and
/// [`ManualClock::advance`] then move every holder's "now" at once.
#[derive(Debug)]
pub struct ManualClock {
    now: std::sync::Mutex<DateTime<Utc>>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: DateTime<Utc>) -> ManualClock {
        ManualClock {
            now: std::sync::Mutex::new(start),
        }
    }

    /// Moves the clock to `at` (backwards too: a test may replay an instant).
    pub fn set(&self, at: DateTime<Utc>) {
        *self.lock() = at;
    }

    /// Moves the clock forward by `by` (a negative duration moves it back).
    pub fn advance(&self, by: chrono::Duration) {
        let mut now = self.lock();
        *now += by;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, DateTime<Utc>> {
        // A poisoned lock still holds a valid instant: a panicking test must not hide it.
        self.now
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.lock()
    }
}
