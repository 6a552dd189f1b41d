//! The calendar plugin's integration tests, one binary: the plugin's verbs on a real vdir folder
//! and a real store (SQLite in memory), as the approvals core calls them.

mod delete_and_restore;
