//! Rebuilds the crate when a migration changes: `sqlx::migrate!` embeds `migrations/sqlite/` and
//! `migrations/postgres/` at compile time, and cargo does not otherwise watch files outside the
//! crate.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations/sqlite");
    println!("cargo:rerun-if-changed=../../migrations/postgres");
}
