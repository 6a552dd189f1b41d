//! The scripted model's scripts the tests share (read by `iris_core::scripted`, served by
//! [`super::ModelServer`]). Each turn the tests drive is written once here; a test that needs
//! one more rule composes it with [`script`].

/// "trash …": the week's promotions found, then one trash card for them; the reply after the
/// card says how many moved, or that nothing changed when the owner rejected.
pub const PROMO_TRASH_RULE: &str = r#"  - when: "(?i)trash"
    steps:
      - call: search_inbox
        args: {category: promotions, since_days: 7}
      - call: trash_email
        args: {ids: "$ids"}
        if_empty: "Nothing matched; nothing was trashed."
      - reply: "Done: moved {trashed} emails to Trash."
        on_rejected: "OK, I left them alone. Nothing was changed, sent or deleted."
"#;

/// "trash offer xNx": the emails whose text holds `xNx` found, then one trash card for them
/// (the many-servers and fault runs make one distinct card per N).
pub const OFFER_TRASH_RULE: &str = r#"  - when: "trash offer (x\\d+x)"
    steps:
      - call: search_inbox
        args: {query: "$1"}
      - call: trash_email
        args: {ids: "$ids"}
        if_empty: "Nothing matched; nothing was trashed."
      - reply: "Done: moved {trashed} emails to Trash."
        on_rejected: "OK, I left it alone."
        on_unknown: "I cannot tell whether it was moved."
"#;

/// "hello": a plain reply, no tool.
pub const HELLO_RULE: &str = r#"  - when: "(?i)hello"
    steps:
      - reply: "Hello! Nothing to do."
"#;

/// A script of `rules` (each a YAML list item, as the `*_RULE` constants), tried in order, and
/// the fallback reply "?".
pub fn script(rules: &[&str]) -> String {
    format!("rules:\n{}fallback: \"?\"\n", rules.concat())
}

/// The promo turn alone ([`PROMO_TRASH_RULE`]).
pub fn promo_trash() -> String {
    script(&[PROMO_TRASH_RULE])
}

/// The offer turn alone ([`OFFER_TRASH_RULE`]).
pub fn offer_trash() -> String {
    script(&[OFFER_TRASH_RULE])
}

/// The script of the crash and liveness tests: the week's promotions found, then one trash
/// card for them; the reply after the card says whether its outcome was unknown.
pub const TRASH_SCRIPT: &str = r#"
rules:
  - when: "(?i)trash"
    steps:
      - call: search_inbox
        args: {category: promotions, since_days: 7}
      - call: trash_email
        args: {ids: "$ids"}
        if_empty: "Nothing matched; nothing was trashed."
      - reply: "Finished."
        on_unknown: "Finished (unknown)."
fallback: "?"
"#;

/// A scripted model that trashes a whole category on a card: a request naming "promo",
/// "newsletter" or "order" searches that category and calls `trash_email` with the ids found.
/// Shared by the suites that race answers on one card (`races.rs`, `cli.rs`).
pub const CATEGORY_TRASH_SCRIPT: &str = r#"
rules:
  - when: "(?i)promo"
    steps:
      - call: search_inbox
        args: {category: promotions}
      - call: trash_email
        args: {ids: "$ids"}
        if_empty: "Nothing matched; nothing was trashed."
      - reply: "Done: moved {trashed} emails to Trash."
        on_rejected: "OK, I left them alone. Nothing was changed, sent or deleted."
  - when: "(?i)newsletter"
    steps:
      - call: search_inbox
        args: {category: newsletters}
      - call: trash_email
        args: {ids: "$ids"}
        if_empty: "Nothing matched; nothing was trashed."
      - reply: "Done: moved {trashed} emails to Trash."
        on_rejected: "OK, I left them alone. Nothing was changed, sent or deleted."
  - when: "(?i)order"
    steps:
      - call: search_inbox
        args: {category: orders}
      - call: trash_email
        args: {ids: "$ids"}
        if_empty: "Nothing matched; nothing was trashed."
      - reply: "Done: moved {trashed} emails to Trash."
        on_rejected: "OK, I left them alone. Nothing was changed, sent or deleted."
fallback: "?"
"#;

/// "clean up GLOB": lists the files of the root `downloads` matching GLOB and asks to move them
/// to quarantine (the files plugin's card on every surface).
pub const FILES_CLEANUP_SCRIPT: &str = r#"
rules:
  - when: "(?i)clean up (.+)"
    steps:
      - call: list_files
        args: {root: downloads, glob: "$1"}
      - call: quarantine_files
        args: {paths: "$ids"}
      - reply: "{summary}"
fallback: "?"
"#;
