//! The calendar plugin's integration tests, one binary: the plugin's verbs on a real vdir folder
//! and on real CalDAV servers (Radicale and Xandikos on loopback, `servers`), with a real store
//! (SQLite in memory), as the approvals core calls them.

mod caldav;
mod delete_and_restore;
mod faults;
mod servers;
