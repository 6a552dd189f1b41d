//! The store suite, run against both engines: every test body is written once over the
//! engine-neutral `Store` and run twice, as `SUBJECT::sqlite::NAME` (a fresh SQLite file) and
//! `SUBJECT::postgres::NAME` (a fresh PostgreSQL database). Together they show that the database itself
//! refuses changing what was approved (DESIGN §2, §6), that compare-and-set writes have exactly
//! one winner (DESIGN §3, §8), that corrupt rows fail closed, and that both engines behave alike.
//!
//! PostgreSQL: each test creates its own database `iris_test_<random>` through the admin url in
//! `IRIS_TEST_POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`) and drops it
//! at the end (best effort). When the server is unreachable the PostgreSQL tests fail, saying how
//! to start it; they never pass silently.
//!
//! One module per subject: [`request_terms`] (the database refuses changing what was approved,
//! writes a response once and deletes nothing), [`queue`] (insert, decide, list; the claim
//! rule), [`telegram_cards`] (which message shows which approval), [`corrupt_rows`],
//! [`devices`] (devices and one-time pairing links), and [`engines`] (where the engines'
//! defaults differ, and choosing one). Each writes its bodies once over an `Engine` and runs
//! them in its own `sqlite` and `postgres` modules.

/// Defines one `#[tokio::test]` per listed body, running it on `$engine`.
macro_rules! engine_tests {
    ($engine:expr; $( $(#[$attr:meta])* $name:ident ),* $(,)?) => {
        $(
            $(#[$attr])*
            async fn $name() {
                super::$name($engine).await;
            }
        )*
    };
}

mod corrupt_rows;
mod devices;
mod engines;
mod queue;
mod request_terms;
mod telegram_cards;
