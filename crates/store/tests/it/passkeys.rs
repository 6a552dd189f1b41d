//! The passkey store on both engines (migration 0021; ADR-0118 decision 4): the first passkey
//! needs no proof and every later change one; a ceremony is used once, only while unlapsed by
//! the store's clock, and only for what it was made for; a removed passkey keeps its row and can
//! no longer prove anything; a card's `passkey_required` is written with it and never changes.

use crate::common;

use common::*;
use iris_core::passkey::{Ceremony, CeremonyPurpose, PasskeyRecord, PasskeyUse, CEREMONY_SECS};
use iris_core::ports::{PasskeyChange, PasskeyStore};

fn ceremony(id: &str, purpose: CeremonyPurpose, binding: Option<(&str, &str)>) -> Ceremony {
    Ceremony {
        id: id.to_owned(),
        purpose,
        approval_id: binding.map(|b| b.0.to_owned()),
        call_hash: binding.map(|b| b.1.to_owned()),
        state: "{}".to_owned(),
        nonce: binding.map(|_| "bm9uY2U".to_owned()),
        device: "laptop".to_owned(),
        created_at: t0(),
        expires_at: t0() + Duration::seconds(CEREMONY_SECS),
        used_at: None,
    }
}

fn passkey(id: &str, credential: &str) -> PasskeyRecord {
    PasskeyRecord {
        id: id.to_owned(),
        credential_id: credential.to_owned(),
        name: format!("key {id}"),
        key: format!("{{\"cred\":\"{credential}\"}}"),
        added_by: "laptop".to_owned(),
        created_at: t0(),
        last_used_at: None,
        removed_at: None,
    }
}

fn proof(ceremony: &str, credential: &str) -> PasskeyUse {
    counted(ceremony, credential, 1)
}

/// A use of `credential` whose assertion carried signature counter `counter`.
fn counted(ceremony: &str, credential: &str, counter: u32) -> PasskeyUse {
    PasskeyUse {
        ceremony_id: ceremony.to_owned(),
        credential_id: credential.to_owned(),
        key: format!("{{\"cred\":\"{credential}\",\"counter\":{counter}}}"),
        counter,
        at: t0(),
    }
}

async fn the_first_passkey_needs_no_proof_and_every_later_change_one(engine: Engine) {
    let db = engine.open().await;
    let s = &db.store;
    for id in ["r1", "r2", "r3"] {
        s.start_ceremony(&ceremony(id, CeremonyPurpose::Register, None))
            .await
            .unwrap();
    }
    s.start_ceremony(&ceremony("m1", CeremonyPurpose::Manage, None))
        .await
        .unwrap();
    let at = t0();
    assert_eq!(
        s.add_passkey("r1", None, &passkey("p1", "AAA"), at)
            .await
            .unwrap(),
        PasskeyChange::Done
    );
    // The registration's ceremony was used: the same one again adds nothing.
    assert!(matches!(
        s.add_passkey("r1", Some(&proof("m1", "AAA")), &passkey("p9", "ZZZ"), at)
            .await
            .unwrap(),
        PasskeyChange::Refused(_)
    ));
    // A second passkey without a proof is refused; with one it is added and the proof used.
    assert!(matches!(
        s.add_passkey("r2", None, &passkey("p2", "BBB"), at)
            .await
            .unwrap(),
        PasskeyChange::Refused(why) if why.contains("needs an assertion")
    ));
    assert_eq!(
        s.add_passkey("r2", Some(&proof("m1", "AAA")), &passkey("p2", "BBB"), at)
            .await
            .unwrap(),
        PasskeyChange::Done
    );
    assert!(s.ceremony("m1").await.unwrap().unwrap().used_at.is_some());
    let first = &s.passkeys(false).await.unwrap()[0];
    assert_eq!(
        first.key, "{\"cred\":\"AAA\",\"counter\":1}",
        "the counter was kept"
    );
    assert_eq!(first.last_used_at, Some(at));
    // The used proof cannot add a third.
    assert!(matches!(
        s.add_passkey("r3", Some(&proof("m1", "AAA")), &passkey("p3", "CCC"), at)
            .await
            .unwrap(),
        PasskeyChange::Refused(_)
    ));
    assert_eq!(s.passkeys(true).await.unwrap().len(), 2);
}

async fn a_ceremony_lapses_by_the_stores_clock(engine: Engine) {
    let db = engine.open().await;
    let s = &db.store;
    s.start_ceremony(&ceremony("r1", CeremonyPurpose::Register, None))
        .await
        .unwrap();
    db.clock.advance(Duration::seconds(CEREMONY_SECS));
    assert!(matches!(
        s.add_passkey("r1", None, &passkey("p1", "AAA"), t0())
            .await
            .unwrap(),
        PasskeyChange::Refused(_)
    ));
    assert!(s.passkeys(true).await.unwrap().is_empty());
}

async fn a_removed_passkey_keeps_its_row_and_proves_nothing(engine: Engine) {
    let db = engine.open().await;
    let s = &db.store;
    for (id, purpose) in [
        ("r1", CeremonyPurpose::Register),
        ("r2", CeremonyPurpose::Register),
        ("m1", CeremonyPurpose::Manage),
    ] {
        s.start_ceremony(&ceremony(id, purpose, None))
            .await
            .unwrap();
    }
    s.add_passkey("r1", None, &passkey("p1", "AAA"), t0())
        .await
        .unwrap();
    // The recovery path: no proof.
    assert_eq!(
        s.remove_passkey("p1", None, "iris passkeys remove", t0())
            .await
            .unwrap(),
        PasskeyChange::Done
    );
    assert!(s.passkeys(false).await.unwrap().is_empty());
    let kept = s.passkeys(true).await.unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].removed_at, Some(t0()));
    assert!(matches!(
        s.remove_passkey("p1", None, "again", t0()).await.unwrap(),
        PasskeyChange::Refused(_)
    ));
    // Its credential can no longer prove a change (and none counts, so the next is "first").
    assert!(matches!(
        s.add_passkey("r2", Some(&proof("m1", "AAA")), &passkey("p2", "BBB"), t0())
            .await
            .unwrap(),
        PasskeyChange::Refused(_)
    ));
    assert!(s.ceremony("m1").await.unwrap().unwrap().used_at.is_none());
    // A removed credential is never registered again.
    assert!(matches!(
        s.add_passkey("r2", None, &passkey("p3", "AAA"), t0())
            .await
            .unwrap(),
        PasskeyChange::Refused(why) if why.contains("registered already")
    ));
}

async fn a_decision_uses_its_cards_ceremony_once(engine: Engine) {
    let db = engine.open().await;
    let s = &db.store;
    let mut row = trash_request("a", &["m1"]);
    row.passkey_required = true;
    insert(s, &row).await.unwrap();
    let other = trash_request("b", &["m2"]);
    insert(s, &other).await.unwrap();
    s.start_ceremony(&ceremony("r1", CeremonyPurpose::Register, None))
        .await
        .unwrap();
    s.add_passkey("r1", None, &passkey("p1", "AAA"), t0())
        .await
        .unwrap();
    s.start_ceremony(&ceremony(
        "for-b",
        CeremonyPurpose::Approve,
        Some(("b", &other.call_hash)),
    ))
    .await
    .unwrap();
    s.start_ceremony(&ceremony(
        "for-a",
        CeremonyPurpose::Approve,
        Some(("a", &row.call_hash)),
    ))
    .await
    .unwrap();
    let approve = |ceremony: &'static str| approve_with("a", proof(ceremony, "AAA"));
    // The plan can be fooled; the store's compare-and-set is the second line: a ceremony made
    // for another card writes nothing.
    let plan = approve("for-b");
    assert!(matches!(
        s.decide("a", Some("for-b"), &plan).await.unwrap(),
        Decided::Unchanged(_)
    ));
    assert_eq!(
        s.approval("a").await.unwrap().unwrap().status,
        ApprovalStatus::Pending
    );
    assert!(s
        .ceremony("for-b")
        .await
        .unwrap()
        .unwrap()
        .used_at
        .is_none());
    let plan = approve("for-a");
    assert!(matches!(
        s.decide("a", Some("for-a"), &plan).await.unwrap(),
        Decided::Written(_)
    ));
    let row_now = s.approval("a").await.unwrap().unwrap();
    assert_eq!(row_now.status, ApprovalStatus::Approved);
    assert!(row_now.passkey_required);
    assert!(s
        .ceremony("for-a")
        .await
        .unwrap()
        .unwrap()
        .used_at
        .is_some());
    // The card's need is a request term: the database refuses to change it.
    let refusal = refused(
        s,
        "UPDATE approvals SET passkey_required = false WHERE id = 'a'",
    )
    .await;
    assert!(refusal.contains("immutable"), "{refusal}");
    assert!(!s.approval("b").await.unwrap().unwrap().passkey_required);
}

/// The plan of an approve of row `id` with the passkey use `used` (what the service's plan
/// returns once the assertion verified).
fn approve_with(
    id: &'static str,
    used: PasskeyUse,
) -> impl Fn(&DecisionRead) -> Option<DecisionCommit> {
    move |read: &DecisionRead| {
        assert_eq!(
            read.ceremony.as_ref().map(|c| c.id.as_str()),
            Some(used.ceremony_id.as_str()),
            "the decision reads the ceremony it names"
        );
        let mut after = read.approval.clone();
        after.status = ApprovalStatus::Approved;
        Some(DecisionCommit {
            audit: NewAuditEntry {
                approval_id: id.into(),
                kind: AuditKind::Decision,
                item: None,
                result: json!({"decision": "approved"}),
                undo_available: false,
                actor: "laptop".into(),
                surface: Some("web".into()),
                at: t0(),
            },
            response: response(ApprovalStatus::Approved, "laptop", t0()),
            after,
            outbox: iris_core::ports::Outbox::default(),
            passkey: Some(used.clone()),
        })
    }
}

/// Two ceremonies answered by one authenticator, committed out of order: the later commit of
/// the lower counter is refused and the stored counter stays where the higher one left it
/// (WebAuthn §7.2 step 22; docs/adr/0124-signed-consent.md).
async fn overlapping_ceremonies_never_lower_the_sign_counter(engine: Engine) {
    let db = engine.open().await;
    let s = &db.store;
    let mut a = trash_request("a", &["m1"]);
    a.passkey_required = true;
    insert(s, &a).await.unwrap();
    let mut b = trash_request("b", &["m2"]);
    b.passkey_required = true;
    insert(s, &b).await.unwrap();
    s.start_ceremony(&ceremony("r1", CeremonyPurpose::Register, None))
        .await
        .unwrap();
    s.add_passkey("r1", None, &passkey("p1", "AAA"), t0())
        .await
        .unwrap();
    for (ceremony_id, row) in [("for-a", &a), ("for-b", &b)] {
        s.start_ceremony(&ceremony(
            ceremony_id,
            CeremonyPurpose::Approve,
            Some((row.id.as_str(), row.call_hash.as_str())),
        ))
        .await
        .unwrap();
    }
    let sign_count = || async {
        let rows = sqlx::query("SELECT sign_count FROM passkeys WHERE id = 'p1'")
            .fetch_all(s.pool())
            .await
            .unwrap();
        sqlx::Row::get::<i64, _>(&rows[0], 0)
    };
    // The authenticator signed for a (counter 4), then for b (counter 5); b commits first.
    let plan = approve_with("b", counted("for-b", "AAA", 5));
    assert!(matches!(
        s.decide("b", Some("for-b"), &plan).await.unwrap(),
        Decided::Written(_)
    ));
    assert_eq!(sign_count().await, 5);
    let plan = approve_with("a", counted("for-a", "AAA", 4));
    assert!(matches!(
        s.decide("a", Some("for-a"), &plan).await.unwrap(),
        Decided::Unchanged(_)
    ));
    assert_eq!(sign_count().await, 5, "the counter was lowered");
    assert_eq!(
        s.approval("a").await.unwrap().unwrap().status,
        ApprovalStatus::Pending
    );
    assert!(s
        .ceremony("for-a")
        .await
        .unwrap()
        .unwrap()
        .used_at
        .is_none());
    // An equal counter is refused too (it would be a replayed or copied authenticator).
    let plan = approve_with("a", counted("for-a", "AAA", 5));
    assert!(matches!(
        s.decide("a", Some("for-a"), &plan).await.unwrap(),
        Decided::Unchanged(_)
    ));
    let plan = approve_with("a", counted("for-a", "AAA", 6));
    assert!(matches!(
        s.decide("a", Some("for-a"), &plan).await.unwrap(),
        Decided::Written(_)
    ));
    assert_eq!(sign_count().await, 6);
}

macro_rules! suite {
    ($engine:expr) => {
        #[tokio::test]
        async fn the_first_passkey_needs_no_proof_and_every_later_change_one() {
            super::the_first_passkey_needs_no_proof_and_every_later_change_one($engine).await;
        }
        #[tokio::test]
        async fn a_ceremony_lapses_by_the_stores_clock() {
            super::a_ceremony_lapses_by_the_stores_clock($engine).await;
        }
        #[tokio::test]
        async fn a_removed_passkey_keeps_its_row_and_proves_nothing() {
            super::a_removed_passkey_keeps_its_row_and_proves_nothing($engine).await;
        }
        #[tokio::test]
        async fn overlapping_ceremonies_never_lower_the_sign_counter() {
            super::overlapping_ceremonies_never_lower_the_sign_counter($engine).await;
        }
        #[tokio::test]
        async fn a_decision_uses_its_cards_ceremony_once() {
            super::a_decision_uses_its_cards_ceremony_once($engine).await;
        }
    };
}

mod sqlite {
    use super::*;
    suite!(Engine::Sqlite);
}

mod postgres {
    use super::*;
    suite!(Engine::Postgres);
}
