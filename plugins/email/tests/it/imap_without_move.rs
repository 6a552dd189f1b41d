//! Trash on a server without MOVE (DESIGN §5: never a permanent delete): with UIDPLUS the
//! backend copies, then flags and `UID EXPUNGE`s exactly the copied UID, so another message
//! already flagged `\Deleted` by another client survives; with neither MOVE nor UIDPLUS it
//! refuses and moves nothing. Dovecot is told to advertise a reduced capability list.

use crate::common;
use crate::dovecot;

use common::*;
use dovecot::Dovecot;
use iris_core::plugin::Plugin;
use iris_email::EmailPlugin;
use serde_json::json;

/// Dovecot's own list minus MOVE (and, with `uidplus = false`, minus UIDPLUS).
fn capabilities(uidplus: bool) -> String {
    format!(
        "imap_capability = IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE LITERAL+ \
         NAMESPACE CHILDREN LIST-EXTENDED SPECIAL-USE{}\n",
        if uidplus { " UIDPLUS" } else { "" }
    )
}

/// Three messages; with `flag_first`, the first one delivered ("Flagged by someone else") gets
/// UID 1 and is flagged `\Deleted` by another client before the others arrive.
fn fill(d: &Dovecot, flag_first: bool) {
    for (n, subject) in ["Flagged by someone else", "Trash me", "Keep me"]
        .iter()
        .enumerate()
    {
        let raw = message(
            subject,
            "Anna <anna@example.net>",
            "Sat, 28 Nov 2026 10:15:00 +0100",
            &format!("w{n}@example.net"),
            "",
        );
        d.deliver("INBOX", &format!("{n}.host"), raw.as_bytes());
        if n == 0 && flag_first {
            d.imap(&["SELECT INBOX", "UID STORE 1 +FLAGS (\\Deleted)"]);
        }
    }
}

/// Whether some INBOX file carries Maildir's `T` flag (IMAP `\Deleted`).
fn deleted_flagged(d: &Dovecot) -> bool {
    ["cur", "new"].iter().any(|sub| {
        std::fs::read_dir(d.folder_dir("INBOX").join(sub))
            .map(|rd| {
                rd.flatten().any(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.split_once(":2,").is_some_and(|(_, f)| f.contains('T'))
                        && String::from_utf8_lossy(&std::fs::read(e.path()).unwrap())
                            .contains("Flagged by someone else")
                })
            })
            .unwrap_or(false)
    })
}

#[tokio::test]
async fn copy_then_expunge_only_the_copied_uid() {
    let d = Dovecot::start_with(&capabilities(true));
    fill(&d, true);
    let said = d.imap(&["CAPABILITY"]);
    assert!(!said.contains(" MOVE"), "{said}");
    let db = memory_store().await;
    let p = EmailPlugin::new(vec![d.account("work")], &db).unwrap();
    p.sync().await.unwrap();
    let victim = id_of(&p, "Trash me").await;
    assert!(
        deleted_flagged(&d),
        "the other client's \\Deleted flag is set"
    );

    let out = p
        .execute("trash_email", &json!({"ids": [victim]}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["trashed"], 1, "{}", out.result);
    assert_eq!(d.count("Trash"), 1);
    assert_eq!(
        d.count("INBOX"),
        2,
        "the other client's \\Deleted message survives"
    );

    let out = p
        .execute("restore_email", &json!({}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["restored"], 1, "{}", out.result);
    assert_eq!((d.count("INBOX"), d.count("Trash")), (3, 0));
    assert_eq!(id_of(&p, "Trash me").await, victim);
}

#[tokio::test]
async fn neither_move_nor_uidplus_is_refused() {
    let d = Dovecot::start_with(&capabilities(false));
    fill(&d, false);
    let db = memory_store().await;
    let p = EmailPlugin::new(vec![d.account("work")], &db).unwrap();
    p.sync().await.unwrap();
    let victim = id_of(&p, "Trash me").await;
    let err = p
        .execute("trash_email", &json!({"ids": [victim]}), &ctx())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("neither MOVE nor UIDPLUS"), "{err}");
    assert_eq!(
        (d.count("INBOX"), d.count("Trash")),
        (3, 0),
        "nothing moved"
    );
    // Still in the store: it was not trashed.
    assert_eq!(id_of(&p, "Trash me").await, victim);
}
