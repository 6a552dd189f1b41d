//! `list_by_category` and `trash_category` on real Maildir files (DESIGN §5): code
//! picks the items, the newest 200 in the window; the guards (no category, every category,
//! nothing to trash, never a permanent delete); provider bucket labels win over triage where an
//! account reports them; `restore_email()` with no ids brings the whole batch back.
//! Every test runs with the local store on SQLite and on PostgreSQL.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use common::*;
use iris_core::plugin::{Plugin, ToolError};
use iris_core::ports::ManualClock;
use iris_email::backend::{
    Appended, Folder, Listed, MessageRef, RestoreOutcome, TrashOutcome, TrashedRef,
};
use iris_email::{AccountInfo, BackendError, EmailPlugin, MailBackend, MaildirBackend};
use serde_json::{json, Value};

/// "Now" for every test: Monday 30 Nov 2026, 12:00 UTC.
fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn rfc2822(days_ago: i64, minutes: i64) -> String {
    (now() - Duration::days(days_ago) - Duration::minutes(minutes)).to_rfc2822()
}

const UNSUB: &str = "List-Unsubscribe: <mailto:u@shop.example>\r\n";

/// One message file in `folder_dir` (relative to the Maildir root) under `cur/`.
fn deliver(
    root: &Path,
    folder_dir: &str,
    n: usize,
    subject: &str,
    from: &str,
    days_ago: i64,
    extra: &str,
) {
    let rel = if folder_dir.is_empty() {
        format!("cur/17000{n:05}.M{n}P1.host:2,S")
    } else {
        format!("{folder_dir}/cur/17000{n:05}.M{n}P1.host:2,S")
    };
    let minutes = i64::try_from(n).unwrap();
    put(
        root,
        &rel,
        message(
            subject,
            from,
            &rfc2822(days_ago, minutes),
            &format!("m{n}@t.example"),
            extra,
        )
        .as_bytes(),
    );
}

/// A week of mixed mail: 3 Northwind and 2 Paperleaf promos this week (one in a subfolder), an
/// old promo, a newsletter, an order, a receipt and two personal messages.
fn mailbox(root: &Path) {
    make_maildir(root);
    make_maildir(&root.join(".Shopping"));
    std::fs::write(root.join(".Shopping/maildirfolder"), b"").unwrap();
    deliver(
        root,
        "",
        1,
        "Winter sale: 30% off",
        "Northwind <deals@email.northwind.example>",
        1,
        UNSUB,
    );
    deliver(
        root,
        "",
        2,
        "Last chance: boots",
        "Northwind <deals@email.northwind.example>",
        2,
        UNSUB,
    );
    deliver(
        root,
        ".Shopping",
        3,
        "New arrivals",
        "Northwind <offers@northwind.example>",
        3,
        "",
    );
    deliver(
        root,
        "",
        4,
        "Books for the holidays",
        "Paperleaf <news@paperleaf.co.uk>",
        4,
        UNSUB,
    );
    deliver(
        root,
        "",
        5,
        "Reading list sale",
        "Paperleaf <promo@paperleaf.co.uk>",
        5,
        UNSUB,
    );
    deliver(
        root,
        "",
        6,
        "October clearance",
        "Northwind <deals@email.northwind.example>",
        40,
        UNSUB,
    );
    deliver(
        root,
        "",
        7,
        "This week in Rust",
        "TWiR <twir@lists.example>",
        2,
        "List-Id: This Week in Rust <twir.lists.example>\r\n",
    );
    deliver(
        root,
        "",
        8,
        "Your order NW-4821 has shipped",
        "Northwind Orders <orders@northwind.example>",
        1,
        "",
    );
    deliver(
        root,
        "",
        9,
        "Payment received",
        "Power Co <billing@power.example>",
        3,
        "",
    );
    deliver(
        root,
        "",
        10,
        "Dinner on Saturday?",
        "Anna Weber <anna@example.net>",
        1,
        "",
    );
    deliver(
        root,
        "",
        11,
        "Photos from the trip",
        "Tom <tom@example.net>",
        2,
        "",
    );
}

fn clocked(p: EmailPlugin) -> EmailPlugin {
    p.with_clock(Arc::new(ManualClock::new(now())))
}

async fn call(p: &EmailPlugin, tool: &str, args: Value) -> Result<Value, ToolError> {
    let args = p.normalise(tool, args, &ctx()).await?;
    p.execute(tool, &args, &ctx()).await.map(|o| o.result)
}

fn subjects(v: &Value, key: &str) -> Vec<String> {
    let mut s: Vec<String> = v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_str()
                .map_or_else(|| r["subject"].as_str().unwrap().to_string(), String::from)
        })
        .collect();
    s.sort();
    s
}

fn files_in(root: &Path, rel: &str) -> usize {
    snapshot(root).keys().filter(|k| k.starts_with(rel)).count()
}

async fn list_and_trash_a_category(engine: Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    mailbox(root);
    let db = engine.open().await;
    let p = clocked(plugin(root, &db.store));
    p.sync().await.unwrap();
    let before = snapshot(root);

    let listed = call(
        &p,
        "list_by_category",
        json!({"category": "promo", "since_days": 7}),
    )
    .await
    .unwrap();
    let week_promos = vec![
        "Books for the holidays",
        "Last chance: boots",
        "New arrivals",
        "Reading list sale",
        "Winter sale: 30% off",
    ];
    assert_eq!(subjects(&listed, "results"), week_promos);
    assert_eq!(listed["total"], 5);
    assert_eq!(listed["categories"], json!(["promotions"]));
    // Newest first.
    assert_eq!(listed["results"][0]["subject"], "Winter sale: 30% off");
    assert_eq!(
        listed["results"][0]["category_path"],
        "deals-promotions/northwind"
    );

    // A merchant's name selects its path only.
    let northwind = call(
        &p,
        "list_by_category",
        json!({"category": "Northwind", "since_days": 90}),
    )
    .await
    .unwrap();
    assert_eq!(
        subjects(&northwind, "results"),
        vec![
            "Last chance: boots",
            "New arrivals",
            "October clearance",
            "Winter sale: 30% off"
        ]
    );
    // "updates" is orders and receipts.
    let updates = call(
        &p,
        "list_by_category",
        json!({"category": "updates", "since_days": 7}),
    )
    .await
    .unwrap();
    assert_eq!(
        subjects(&updates, "results"),
        vec!["Payment received", "Your order NW-4821 has shipped"]
    );

    // The clean-up: exactly this week's promos move to Trash, byte-identical; nothing else.
    let done = call(
        &p,
        "trash_category",
        json!({"category": "my promo emails", "since_days": 7}),
    )
    .await
    .unwrap();
    assert_eq!(done["trashed"], 5, "{done}");
    assert_eq!(done["remaining"], 0);
    assert_eq!(done["undo"], "restore_email");
    assert_eq!(subjects(&done, "sample"), week_promos);
    assert_eq!(files_in(root, ".Trash/cur/"), 5);
    let after = snapshot(root);
    let messages = |s: &std::collections::BTreeMap<String, Vec<u8>>| {
        s.keys().filter(|k| !k.ends_with("maildirfolder")).count()
    };
    assert_eq!(
        messages(&after),
        messages(&before),
        "no message file was deleted"
    );
    let mut moved: Vec<&Vec<u8>> = after
        .iter()
        .filter(|(k, _)| k.starts_with(".Trash/cur/"))
        .map(|(_, v)| v)
        .collect();
    moved.sort();
    // Compared as text, so a failure prints readable mail.
    let moved: Vec<String> = moved
        .iter()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect();
    let mut originals: Vec<&Vec<u8>> = before
        .values()
        .filter(|v| {
            let t = String::from_utf8_lossy(v);
            week_promos
                .iter()
                .any(|s| t.contains(&format!("Subject: {s}\r\n")))
        })
        .collect();
    originals.sort();
    let originals: Vec<String> = originals
        .iter()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect();
    assert_eq!(
        moved, originals,
        "the Trash holds exactly the week's promos, unchanged"
    );
    let left = call(&p, "search_inbox", json!({"limit": 200}))
        .await
        .unwrap();
    assert_eq!(left["total"], 6);

    // Asking again finds nothing: "nothing to trash", and nothing moves.
    let again = call(
        &p,
        "trash_category",
        json!({"category": "promo", "since_days": 7}),
    )
    .await
    .unwrap();
    assert_eq!(again["trashed"], 0);
    assert!(
        again["message"]
            .as_str()
            .unwrap()
            .starts_with("Nothing to trash"),
        "{again}"
    );
    assert_eq!(snapshot(root), after);

    // "undo that": restore_email with no ids brings back the whole trash_category batch.
    let restored = call(&p, "restore_email", json!({})).await.unwrap();
    assert_eq!(restored["restored"], 5, "{restored}");
    assert_eq!(restored["batch"], done["batch"]);
    assert_eq!(files_in(root, ".Trash/cur/"), 0);
    let back = snapshot(root);
    for (k, v) in &before {
        // Same folder, same bytes (flags may be kept as they were: the files were in cur/).
        assert_eq!(back.get(k), Some(v), "{k} came back where it was");
    }
}

async fn guards_move_nothing(engine: Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    mailbox(root);
    let db = engine.open().await;
    let p = clocked(plugin(root, &db.store));
    p.sync().await.unwrap();
    let before = snapshot(root);

    for word in ["email", "all", "everything", "my emails", "Inbox"] {
        let e = call(
            &p,
            "trash_category",
            json!({"category": word, "since_days": 30}),
        )
        .await
        .unwrap_err();
        assert!(matches!(e, ToolError::InvalidArgs { .. }), "{word}: {e}");
        assert!(e.to_string().contains("covers every category"), "{e}");
        assert!(e.to_string().contains("nothing was moved"), "{e}");
    }
    let e = call(
        &p,
        "trash_category",
        json!({"category": "zebras", "since_days": 30}),
    )
    .await
    .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("no category matches `zebras`"), "{text}");
    assert!(
        text.contains("deals-promotions/northwind"),
        "names what exists: {text}"
    );
    // Schema-shaped mistakes are refused before anything is read.
    for bad in [
        json!({"category": "promo"}),
        json!({"category": "promo", "since_days": 0}),
        json!({"category": "promo", "since_days": "7"}),
        json!({"category": ["promo"], "since_days": 7}),
        json!({"category": "promo", "since_days": 7, "ids": ["m1"]}),
        json!("promo"),
    ] {
        let e = call(&p, "trash_category", bad.clone()).await.unwrap_err();
        assert!(matches!(e, ToolError::InvalidArgs { .. }), "{bad}: {e}");
    }
    // A category with nothing in the window says so.
    let none = call(
        &p,
        "trash_category",
        json!({"category": "receipts", "since_days": 1}),
    )
    .await
    .unwrap();
    assert_eq!(none["trashed"], 0);
    assert_eq!(snapshot(root), before, "no guard moved or deleted anything");
}

async fn newest_200_in_the_window(engine: Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    make_maildir(root);
    for n in 1..=230 {
        // Minutes apart, all within the last day; n = 1 is the newest.
        deliver(
            root,
            "",
            n,
            &format!("Deal {n:03}"),
            "Shop <deals@shop.example>",
            0,
            UNSUB,
        );
    }
    deliver(root, "", 999, "Hello", "Anna <anna@example.net>", 0, "");
    let db = engine.open().await;
    let p = clocked(plugin(root, &db.store));
    p.sync().await.unwrap();
    let done = call(
        &p,
        "trash_category",
        json!({"category": "deals", "since_days": 2}),
    )
    .await
    .unwrap();
    assert_eq!(done["trashed"], 200);
    assert_eq!(done["remaining"], 30);
    let trashed: Vec<String> = done["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["subject"].as_str().unwrap().to_string())
        .collect();
    let expected: Vec<String> = (1..=200).map(|n| format!("Deal {n:03}")).collect();
    let mut sorted = trashed.clone();
    sorted.sort();
    assert_eq!(
        sorted, expected,
        "the newest 200 went, the oldest 30 stayed"
    );
    let left = call(
        &p,
        "list_by_category",
        json!({"category": "deals", "since_days": 2, "limit": 200}),
    )
    .await
    .unwrap();
    assert_eq!(left["total"], 30);
}

/// A provider with buckets (Gmail's category tabs), over a real Maildir: labels come from a
/// table the test fills, keyed by the message file's key.
#[derive(Debug)]
struct Bucketed {
    inner: MaildirBackend,
    labels: Vec<(String, Vec<String>)>,
}

#[async_trait]
impl MailBackend for Bucketed {
    fn account(&self) -> &AccountInfo {
        self.inner.account()
    }
    fn reports_buckets(&self) -> bool {
        true
    }
    async fn folders(&self) -> Result<Vec<Folder>, BackendError> {
        self.inner.folders().await
    }
    async fn list(&self, folder: &str) -> Result<Vec<Listed>, BackendError> {
        let mut listed = self.inner.list(folder).await?;
        for l in &mut listed {
            if let Some((_, labels)) = self.labels.iter().find(|(k, _)| *k == l.key) {
                l.labels.clone_from(labels);
            }
        }
        Ok(listed)
    }
    async fn read(&self, msg: &MessageRef) -> Result<Option<Vec<u8>>, BackendError> {
        self.inner.read(msg).await
    }
    async fn trash(&self, msgs: &[MessageRef]) -> Result<Vec<TrashOutcome>, BackendError> {
        self.inner.trash(msgs).await
    }
    async fn restore(&self, msgs: &[TrashedRef]) -> Result<Vec<RestoreOutcome>, BackendError> {
        self.inner.restore(msgs).await
    }
    async fn append_sent(&self, raw: &[u8]) -> Result<Appended, BackendError> {
        self.inner.append_sent(raw).await
    }
}

fn key(n: usize) -> String {
    format!("17000{n:05}.M{n}P1.host")
}

async fn provider_buckets_win_over_triage(engine: Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let (gmail_dir, local_dir) = (tmp.path().join("gmail"), tmp.path().join("local"));
    make_maildir(&gmail_dir);
    // Triage says promotion, the provider says Primary: stays.
    deliver(
        &gmail_dir,
        "",
        1,
        "Your loyalty points",
        "Shop <deals@shop.example>",
        1,
        UNSUB,
    );
    // Triage says personal, the provider's Promotions tab: goes.
    deliver(
        &gmail_dir,
        "",
        2,
        "A note from our founder",
        "Jo Shop <jo@shop.example>",
        1,
        "",
    );
    // Both agree: goes.
    deliver(
        &gmail_dir,
        "",
        3,
        "Flash sale",
        "Shop <deals@shop.example>",
        1,
        UNSUB,
    );
    // An order in the Updates tab, and a receipt in the Updates tab.
    deliver(
        &gmail_dir,
        "",
        4,
        "Your order 991 has shipped",
        "Shop <orders@shop.example>",
        1,
        "",
    );
    deliver(
        &gmail_dir,
        "",
        5,
        "Payment received",
        "Shop <billing@shop.example>",
        1,
        "",
    );
    // The other account has no buckets: triage decides.
    make_maildir(&local_dir);
    deliver(
        &local_dir,
        "",
        6,
        "Local promo",
        "Shop <deals@shop.example>",
        1,
        UNSUB,
    );
    deliver(
        &local_dir,
        "",
        7,
        "Local friend",
        "Anna <anna@example.net>",
        1,
        "",
    );

    let labelled = |n: usize, l: &str| (key(n), vec!["INBOX".to_string(), l.to_string()]);
    let gmail = Bucketed {
        inner: MaildirBackend::open(
            AccountInfo {
                name: "gmail".into(),
                address: "owner@gmail.example".into(),
            },
            &gmail_dir,
        )
        .unwrap(),
        labels: vec![
            labelled(1, "CATEGORY_PERSONAL"),
            labelled(2, "CATEGORY_PROMOTIONS"),
            labelled(3, "CATEGORY_PROMOTIONS"),
            labelled(4, "CATEGORY_UPDATES"),
            labelled(5, "CATEGORY_UPDATES"),
        ],
    };
    let local = MaildirBackend::open(
        AccountInfo {
            name: "local".into(),
            address: "owner@example.org".into(),
        },
        &local_dir,
    )
    .unwrap();
    let db = engine.open().await;
    let backends: Vec<Arc<dyn MailBackend>> = vec![Arc::new(gmail), Arc::new(local)];
    let p = clocked(EmailPlugin::with_backends(backends, &db.store).unwrap());
    p.sync().await.unwrap();

    // Orders on the bucketed account: the Updates label AND triage (the bucket also holds
    // receipts, which were not asked for).
    let orders = call(
        &p,
        "list_by_category",
        json!({"category": "orders", "since_days": 7}),
    )
    .await
    .unwrap();
    assert_eq!(
        subjects(&orders, "results"),
        vec!["Your order 991 has shipped"]
    );

    let done = call(
        &p,
        "trash_category",
        json!({"category": "promotions", "since_days": 7}),
    )
    .await
    .unwrap();
    assert_eq!(
        subjects(&done, "sample"),
        vec!["A note from our founder", "Flash sale", "Local promo"]
    );
    assert_eq!(files_in(&gmail_dir, ".Trash/cur/"), 2);
    assert_eq!(files_in(&local_dir, ".Trash/cur/"), 1);
    let kept = call(&p, "search_inbox", json!({"query": "loyalty"}))
        .await
        .unwrap();
    assert_eq!(
        kept["total"], 1,
        "the provider's Primary tab wins over triage"
    );

    // Undo brings both accounts' messages back.
    let restored = call(&p, "restore_email", json!({})).await.unwrap();
    assert_eq!(restored["restored"], 3);
    assert_eq!(files_in(&gmail_dir, ".Trash/cur/"), 0);
    assert_eq!(files_in(&local_dir, ".Trash/cur/"), 0);
}

/// A clean-up of "personal" must not take the owner's own sent mail.
async fn the_owners_own_mail_is_never_taken(engine: Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    mailbox(root);
    make_maildir(&root.join(".Sent"));
    std::fs::write(root.join(".Sent/maildirfolder"), b"").unwrap();
    deliver(
        root,
        ".Sent",
        20,
        "Re: Dinner on Saturday?",
        "Robin <OWNER@example.org>",
        1,
        "",
    );
    let db = engine.open().await;
    let p = clocked(plugin(root, &db.store));
    p.sync().await.unwrap();
    let listed = call(
        &p,
        "list_by_category",
        json!({"category": "personal", "since_days": 7}),
    )
    .await
    .unwrap();
    assert_eq!(
        subjects(&listed, "results"),
        vec!["Dinner on Saturday?", "Photos from the trip"]
    );
    let done = call(
        &p,
        "trash_category",
        json!({"category": "personal", "since_days": 7}),
    )
    .await
    .unwrap();
    assert_eq!(done["trashed"], 2);
    assert_eq!(files_in(root, ".Sent/cur/"), 1, "the sent reply stayed");
}

on_both_engines!(
    the_owners_own_mail_is_never_taken,
    list_and_trash_a_category,
    guards_move_nothing,
    newest_200_in_the_window,
    provider_buckets_win_over_triage,
);
