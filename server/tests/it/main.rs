//! The server's integration tests, one binary (each `mod` below was its own test binary; one
//! link step instead of thirty). `support` is what they share: the scripted model on loopback,
//! an `iris serve` process (`support::Iris`) for the tests that need a process, and the
//! in-process app (`support::TestApp`) for the rest. `faults.rs` stays its own binary: it has its
//! own harness (`harness = false`) and a long run (BENCHMARKS.md "Fault run").
//!
//! Run one file's tests with a filter: `cargo test -p server --features server/ssr --test it --
//! lifecycle::`.

mod support;
// The email plugin's Dovecot on loopback and its SMTP sink, shared with its own tests.
#[path = "../../../plugins/email/tests/it/dovecot/mod.rs"]
mod dovecot;
#[path = "../../../plugins/email/tests/it/send_support/smtp_sink.rs"]
mod smtp_sink;

mod calendar;
mod card_form;
mod cli;
mod compression;
mod consent;
mod crash;
mod dropped_client;
mod editing;
mod escalation;
mod files;
mod flow;
mod honest_failures;
mod imap_flow;
mod in_process;
mod lifecycle;
mod liveness;
mod loop_rules;
mod mail_jobs;
mod many_servers;
mod mcp_gateway;
mod mcp_upstream;
mod mcp_upstreams;
mod narrowing;
mod openapi;
mod pages;
mod pairing;
mod passkeys;
mod plugins;
mod provenance;
mod push;
mod races;
mod reason;
mod records;
mod resume_retry;
mod send_flow;
mod shutdown;
mod startup;
mod streaming;
mod telegram;
mod undo;
