//! The email plugin's integration tests, one binary (each `mod` below was its own test
//! binary). Shared: `common` (Maildirs, messages, both store engines), `dovecot` (a real
//! Dovecot on loopback, also used by the server's tests) and `send_support` (an SMTP sink).
//!
//! Run one file's tests with a filter: `cargo test -p email --test it -- imap_sync::`.

#[macro_use]
mod common;
mod dovecot;
mod send_support;

mod category_tools;
mod corpus;
mod demo_mailbox;
mod imap_backend;
mod imap_corpus;
mod imap_sync;
mod imap_trash_restore;
mod imap_without_move;
mod manifest_and_describe;
mod send_email_rules;
mod send_email_smtp;
mod sync_in_chunks;
mod sync_malformed;
mod trash_is_reversible;
