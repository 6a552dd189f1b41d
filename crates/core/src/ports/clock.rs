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

/// The database's clock as one server reads it: a wall clock plus the offset last measured
/// against the database ([`DatabaseClock::align`], at start-up and on every sweep). Every server
/// of one database then stamps `created_at`, `expires_at` and the rest in the database's time,
/// whatever its own clock says, so a server whose clock runs fast or slow cannot lengthen or
/// shorten a card's life; the lapse tests in SQL read the database's clock itself
/// (docs/liveness.md "truthful records"). The offset's error is half the read's round trip plus
/// the wall clock's drift over one sweep.
pub struct DatabaseClock {
    wall: std::sync::Arc<dyn Clock>,
    /// Database minus wall, in microseconds.
    offset_us: std::sync::atomic::AtomicI64,
}

impl DatabaseClock {
    /// A clock reading `wall` until the first [`DatabaseClock::align`].
    pub fn new(wall: std::sync::Arc<dyn Clock>) -> DatabaseClock {
        DatabaseClock {
            wall,
            offset_us: std::sync::atomic::AtomicI64::new(0),
        }
    }

    /// Measures the offset to `store`'s clock (the wall clock read before and after the
    /// database's, their midpoint taken as the database's instant) and uses it from now on.
    /// Returns the offset (database minus wall).
    ///
    /// # Errors
    /// [`super::StoreError`] when the database cannot be read: the last offset stays.
    pub async fn align(
        &self,
        store: &dyn super::ApprovalStore,
    ) -> Result<chrono::Duration, super::StoreError> {
        let before = self.wall.now();
        let database = store.database_now().await?;
        let after = self.wall.now();
        let midpoint = before + (after - before) / 2;
        let offset = database - midpoint;
        if let Some(us) = offset.num_microseconds() {
            self.offset_us
                .store(us, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(offset)
    }
}

impl Clock for DatabaseClock {
    fn now(&self) -> DateTime<Utc> {
        let offset = self.offset_us.load(std::sync::atomic::Ordering::Relaxed);
        self.wall.now() + chrono::Duration::microseconds(offset)
    }
}
