//! IRIS approvals core: the domain of per-call consent, with no I/O.
//!
//! What lives here (DESIGN §6): the manifest and its refusals ([`manifest`]), canonical JSON and
//! the call hash ([`canonical`]), the approval state machine and card ([`approval`], [`wire`]),
//! PreToolUse hooks ([`hooks`]), PostStep evaluators ([`evaluator`]), the loaded tools
//! ([`toolbox`]), the agent loop, which only proposes calls ([`agent`]), and the approvals
//! service, which owns the whole lifecycle every surface goes through: request, respond,
//! expire, execute, resume, retry, recover ([`approvals`]).
//!
//! Beside them: what led to a pinned call, frozen with its card as its trail and flags
//! ([`provenance`]); escalation, the judge of what a card needs beyond the owner's answer
//! ([`escalation`]); the MCP gateway's upstream manifests ([`mcp`]); pairing a browser as a
//! device ([`pairing`]); passkeys bound to the call ([`passkey`], ADR-0118 decision 4); Web
//! Push's messages, keys and addresses ([`push`]); the scripted model of the demo and the tests
//! ([`scripted`]); and the test-only failpoints, compiled to nothing in release builds
//! ([`failpoint`], docs/liveness.md "faults the tests inject").
//!
//! Storage, models and plugins sit behind the traits of [`ports`], [`model`] and [`plugin`];
//! `crates/store` implements storage with sqlx, `server/` wires everything.
//!
//! With `default-features = false` only [`wire`] is compiled: the JSON shapes of DESIGN §7 that
//! the browser half of the app shares with the server (it builds for `wasm32-unknown-unknown`).

pub mod wire;

#[cfg(feature = "kernel")]
pub mod agent;
#[cfg(feature = "kernel")]
pub mod approval;
#[cfg(feature = "kernel")]
pub mod approvals;
#[cfg(feature = "kernel")]
pub mod canonical;
#[cfg(feature = "kernel")]
pub mod escalation;
#[cfg(feature = "kernel")]
pub mod evaluator;
#[cfg(feature = "kernel")]
pub mod failpoint;
#[cfg(feature = "kernel")]
pub mod hooks;
#[cfg(feature = "kernel")]
pub mod manifest;
#[cfg(feature = "kernel")]
pub mod mcp;
#[cfg(feature = "kernel")]
pub mod model;
#[cfg(feature = "kernel")]
pub mod pairing;
#[cfg(feature = "kernel")]
pub mod passkey;
#[cfg(feature = "kernel")]
pub mod plugin;
#[cfg(feature = "kernel")]
pub mod ports;
#[cfg(feature = "kernel")]
pub mod provenance;
#[cfg(feature = "kernel")]
pub mod push;
#[cfg(feature = "kernel")]
pub mod scripted;
#[cfg(feature = "kernel")]
pub mod toolbox;

pub use wire::*;
