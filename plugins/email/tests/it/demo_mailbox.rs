//! The demo mailbox: generated relative to now, synced, searchable by category and window; with
//! the local store on SQLite (`sqlite::NAME`) and on PostgreSQL (`postgres::NAME`).

use crate::common;

use chrono::{TimeZone, Utc};
use common::*;
use iris_email::demo::{promotions_this_week, write_demo_maildir};
use serde_json::json;
use std::sync::Arc;

struct Fixed(chrono::DateTime<Utc>);
impl iris_core::ports::Clock for Fixed {
    fn now(&self) -> chrono::DateTime<Utc> {
        self.0
    }
}

async fn demo_promotions_this_week(engine: Engine) {
    let now = Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 0).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("Maildir");
    let n = write_demo_maildir(&dir, now).unwrap();
    assert!((30..=40).contains(&n), "{n} messages");
    // Idempotent: a mailbox with messages is left alone.
    let before = snapshot(&dir);
    assert_eq!(write_demo_maildir(&dir, now).unwrap(), 0);
    assert_eq!(snapshot(&dir), before);
    // Deterministic given now.
    let other = tmp.path().join("Other");
    write_demo_maildir(&other, now).unwrap();
    assert_eq!(snapshot(&other), before);

    let db = engine.open().await;
    let p = plugin(&dir, &db.store).with_clock(Arc::new(Fixed(now)));
    let report = p.sync().await.unwrap();
    assert_eq!(report.accounts[0].added, n, "{report:?}");
    assert_eq!(report.accounts[0].incomplete, 0, "{report:?}");

    let r = search(&p, json!({"category": "promotions", "since_days": 7})).await;
    let mut got: Vec<String> = hits(&r).into_iter().map(|(_, s)| s).collect();
    let mut want: Vec<String> = promotions_this_week()
        .into_iter()
        .map(String::from)
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want, "{r}");
    assert_eq!(want.len(), 5);

    // Older promotions exist but are outside the window.
    let all = search(&p, json!({"category": "promo"})).await;
    assert_eq!(all["count"], 8, "{all}");
    assert!(hits(&all)
        .iter()
        .any(|(_, s)| s == "Autumn clearance: up to 50% off"));

    // Every category is represented, and each result carries what the model needs.
    for c in ["newsletters", "orders", "receipts", "personal"] {
        let r = search(&p, json!({"category": c})).await;
        assert!(r["count"].as_u64().unwrap() >= 3, "{c}: {r}");
    }
    let first = &r["results"][0];
    for field in ["id", "subject", "from", "date", "category"] {
        assert!(!first[field].is_null(), "{field} in {first}");
    }

    // Threads: the dinner thread (two in INBOX, one in Sent) shares one thread id.
    let t = search(&p, json!({"query": "dinner saturday"})).await;
    assert_eq!(t["count"], 3, "{t}");
    let threads: std::collections::BTreeSet<&str> = t["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["thread"].as_str().unwrap())
        .collect();
    assert_eq!(threads.len(), 1, "{t}");

    // The card for "trash this week's promos" names all five, sender first.
    let promo_ids: Vec<String> = hits(&r).into_iter().map(|(i, _)| i).collect();
    let d = iris_core::plugin::Plugin::describe(
        &p,
        "trash_email",
        &json!({ "ids": promo_ids }),
        &ctx(),
    )
    .await
    .unwrap();
    assert_eq!(d.title, "Trash 5 emails");
    assert_eq!(d.items, promo_ids);
    assert!(
        d.lines[0]
            .starts_with("20% off winter jackets — this weekend only — Northwind Outfitters, "),
        "{:?}",
        d.lines
    );
}

on_both_engines!(demo_promotions_this_week,);
