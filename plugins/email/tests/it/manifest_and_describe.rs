//! The manifest loads with the declared effects and undo; describe gives the card; normalise
//! gives the pinned form. The tests over a synced mailbox run with the local store on SQLite
//! (`sqlite::NAME`) and on PostgreSQL (`postgres::NAME`).

use crate::common;

use common::*;
use iris_core::manifest::{Confirm, Gate, Manifest, Registry};
use iris_core::plugin::{Plugin, ToolError};
use iris_core::Effect;
use serde_json::{json, Value};

#[test]
fn manifest_declares_effects_and_undo() {
    let m = Manifest::from_yaml(iris_email::MANIFEST_YAML).expect("manifest loads");
    assert_eq!(m.plugin, "email");
    let tool = |n: &str| m.tools.iter().find(|t| t.name == n).expect(n).clone();

    let search = tool("search_inbox");
    assert_eq!(search.effect, Effect::Read);
    assert_eq!(search.gate(), Gate::None);

    let trash = tool("trash_email");
    assert_eq!(trash.effect, Effect::Destructive);
    assert_eq!(trash.undo.as_deref(), Some("restore_email"));
    assert_eq!(
        trash.undo_window_days,
        Some(iris_email::tools::trash_email::UNDO_WINDOW_DAYS)
    );
    assert!(trash.approved_per_call());
    assert_eq!(trash.parameters["required"], json!(["ids"]));
    assert_eq!(trash.parameters["properties"]["ids"]["maxItems"], 200);

    let restore = tool("restore_email");
    assert_eq!(restore.effect, Effect::Write);
    assert_eq!(restore.confirm, Some(Confirm::Never));
    assert!(!restore.approved_per_call());

    for t in &m.tools {
        assert_eq!(t.parameters["type"], "object", "{}", t.name);
        assert_eq!(t.parameters["additionalProperties"], false, "{}", t.name);
        assert!(t.description.len() > 40, "{} needs a description", t.name);
    }

    let reg = Registry::new([m]).unwrap();
    for alias in [
        "delete_email",
        "remove_email",
        "Delete-Emails",
        "trash_emails",
    ] {
        assert_eq!(reg.resolve(alias).unwrap().name, "trash_email", "{alias}");
    }
    for alias in ["untrash_email", "undo_trash"] {
        assert_eq!(reg.resolve(alias).unwrap().name, "restore_email", "{alias}");
    }
}

/// Three synced messages, with the local store on `engine`.
async fn three_messages(engine: Engine) -> (tempfile::TempDir, TestDb, iris_email::EmailPlugin) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    make_maildir(dir);
    put(
        dir,
        "cur/1.M1.h:2,S",
        message(
            "Dinner on Saturday?",
            "\"Anna Weber\" <anna@example.net>",
            "Sat, 28 Nov 2026 10:15:00 +0000",
            "a@x",
            "",
        )
        .as_bytes(),
    );
    put(
        dir,
        "cur/2.M2.h:2,S",
        message(
            "Invoice INV-7",
            "billing@host.example",
            "Tue, 3 Nov 2026 10:15:00 +0000",
            "b@x",
            "",
        )
        .as_bytes(),
    );
    put(
        dir,
        "cur/3.M3.h:2,S",
        b"From: Tom <tom@example.net>\r\n\r\nno subject, no date\r\n",
    );
    let db = engine.open().await;
    let p = plugin(dir, &db.store);
    p.sync().await.unwrap();
    (tmp, db, p)
}

async fn describe_gives_title_lines_and_items(engine: Engine) {
    let (_tmp, _db, p) = three_messages(engine).await;
    let a = id_of(&p, "Dinner on Saturday?").await;
    let b = id_of(&p, "Invoice INV-7").await;
    let all = hits(&search(&p, json!({})).await);
    let c = all.iter().find(|(_, s)| s.is_empty()).unwrap().0.clone();

    let d = p
        .describe("trash_email", &json!({"ids": [a]}), &ctx())
        .await
        .unwrap();
    assert_eq!(d.title, "Trash 1 email");
    assert_eq!(d.action, "Trash 1 email");
    assert_eq!(
        d.lines,
        vec!["Dinner on Saturday? — Anna Weber, 28 Nov 2026"]
    );
    assert_eq!(d.items, vec![a.clone()]);
    assert!(d.undo_note.unwrap().contains("30 days"));

    let d = p
        .describe("trash_email", &json!({"ids": [b, c, a]}), &ctx())
        .await
        .unwrap();
    assert_eq!(d.title, "Trash 3 emails");
    assert_eq!(
        d.lines,
        vec![
            "Invoice INV-7 — billing@host.example, 3 Nov 2026".to_string(),
            "(no subject) — Tom, no date".to_string(),
            "Dinner on Saturday? — Anna Weber, 28 Nov 2026".to_string(),
        ]
    );
    assert_eq!(d.items, vec![b, c, a]);
}

/// An id that does not exist is named on the card and skipped (its
/// precondition is never met, so the core leaves it out); the rest proceed. A call naming no
/// existing id is refused by name, so no row pins it.
async fn unknown_ids_are_named_and_the_rest_proceed(engine: Engine) {
    let (_tmp, _db, p) = three_messages(engine).await;
    let a = id_of(&p, "Dinner on Saturday?").await;
    let ghost = "m000000000000";
    let args = json!({"ids": [a, ghost]});
    let d = p.describe("trash_email", &args, &ctx()).await.unwrap();
    assert_eq!(d.title, "Trash 1 email");
    assert_eq!(d.items, vec![a.clone(), ghost.to_string()]);
    assert!(
        d.lines[0].starts_with("Dinner on Saturday? — Anna Weber"),
        "{:?}",
        d.lines
    );
    assert!(
        d.lines[1].starts_with("m000000000000 — not found, nothing will be done to it"),
        "{:?}",
        d.lines
    );
    assert_eq!(d.preconditions[1], Value::Null);
    assert!(
        !p.check_precondition("trash_email", ghost, &Value::Null, &ctx())
            .await,
        "a null precondition is never met"
    );
    assert!(
        p.check_precondition("trash_email", &a, &d.preconditions[0], &ctx())
            .await
    );
    let out = p
        .execute_skipping("trash_email", &args, &[ghost.to_string()], &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["trashed"], 1);

    // Every id unknown, or already trashed: refused by name, nothing pinned.
    let err = p
        .describe("trash_email", &json!({"ids": [ghost]}), &ctx())
        .await
        .unwrap_err();
    match err {
        ToolError::InvalidArgs { tool, reason } => {
            assert_eq!(tool, "trash_email");
            assert!(reason.contains(ghost), "{reason}");
        }
        other => panic!("expected InvalidArgs, got {other:?}"),
    }
    let err = p
        .describe("trash_email", &json!({"ids": [a]}), &ctx())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("already in Trash"), "{err}");
}

async fn normalise_dedupes_and_refuses_empty(engine: Engine) {
    let (_tmp, _db, p) = three_messages(engine).await;
    let n = p
        .normalise(
            "trash_email",
            json!({"ids": [" mB1 ", "ma1", "mb1", "ma1"]}),
            &ctx(),
        )
        .await
        .unwrap();
    assert_eq!(n, json!({"ids": ["mb1", "ma1"]}));
    let again = p.normalise("trash_email", n.clone(), &ctx()).await.unwrap();
    assert_eq!(again, n, "normalise is idempotent");
    for bad in [
        json!({"ids": []}),
        json!({"ids": ["  "]}),
        json!({}),
        json!({"ids": "ma1"}),
    ] {
        assert!(
            matches!(
                p.normalise("trash_email", bad.clone(), &ctx()).await,
                Err(ToolError::InvalidArgs { .. })
            ),
            "{bad}"
        );
    }
    assert!(matches!(
        p.normalise("wipe_email", json!({}), &ctx()).await,
        Err(ToolError::UnknownTool(_))
    ));
}

on_both_engines!(
    describe_gives_title_lines_and_items,
    unknown_ids_are_named_and_the_rest_proceed,
    normalise_dedupes_and_refuses_empty,
);
