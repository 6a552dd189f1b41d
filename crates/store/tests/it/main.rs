//! The store's integration tests, one binary (each `mod` below was its own test binary), each
//! against both engines: SQLite in a temp file and PostgreSQL on 127.0.0.1:5432 (a database per
//! test). `common` opens them.
//!
//! Run one file's tests with a filter: `cargo test -p iris-store --test it -- units::`.

mod common;

mod curator;
mod gateway;
mod locks;
mod pages;
mod passkeys;
mod store;
mod units;
mod upgrade;
