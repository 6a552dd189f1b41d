//! Devices and one-time pairing links: a device is added, authenticates, is listed and revoked;
//! a pairing link pairs one device once before it lapses, however many redeem it at once.

use crate::common;

use common::*;

// ---------------------------------------------------------------------------------------------
// Conversations and devices.
// ---------------------------------------------------------------------------------------------

async fn devices_add_authenticate_list_revoke(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let phone = Device {
        name: "phone".to_owned(),
        scope: Scope::Control,
        created_at: t0(),
        last_used_at: None,
    };
    let wall = Device {
        name: "wall".to_owned(),
        scope: Scope::Read,
        created_at: t0(),
        last_used_at: None,
    };
    store.add(&phone, "hash-phone").await.expect("add");
    store.add(&wall, "hash-wall").await.expect("add");
    assert!(matches!(
        store.add(&phone, "hash-other").await,
        Err(StoreError::Backend(m)) if m.contains("already exists")
    ));
    assert!(matches!(
        store.add(&Device { name: "tablet".to_owned(), ..wall.clone() }, "hash-wall").await,
        Err(StoreError::Backend(m)) if m.contains("token")
    ));

    let used = t0() + Duration::minutes(7);
    let got = store
        .authenticate("hash-phone", used)
        .await
        .expect("auth")
        .expect("device");
    assert_eq!(got.name, "phone");
    assert_eq!(got.scope, Scope::Control);
    assert_eq!(got.last_used_at, Some(used));
    assert!(store
        .authenticate("hash-nobody", used)
        .await
        .expect("auth")
        .is_none());

    let listed = DeviceStore::list(&store).await.expect("list");
    assert_eq!(
        listed.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
        ["phone", "wall"]
    );
    assert_eq!(listed[0].last_used_at, Some(used));
    assert_eq!(listed[1].scope, Scope::Read);
    // Recorded at most once a minute: a use 30 s later is not a write; one a minute later is.
    let soon = used + Duration::seconds(30);
    let again = store
        .authenticate("hash-phone", soon)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.last_used_at, Some(used));
    let later = used + Duration::seconds(60);
    let again = store
        .authenticate("hash-phone", later)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.last_used_at, Some(later));
    let listed = DeviceStore::list(&store).await.expect("list");
    assert_eq!(listed[0].last_used_at, Some(later));

    assert!(store.is_live("hash-phone").await.expect("live"));
    assert!(!store.is_live("hash-nobody").await.expect("live"));
    assert!(store.revoke("phone").await.expect("revoke"));
    assert!(!store.is_live("hash-phone").await.expect("live"), "revoked");
    assert!(!store.revoke("phone").await.expect("revoke"));
    assert!(!store.revoke("nobody").await.expect("revoke"));
    assert!(store
        .authenticate("hash-phone", used)
        .await
        .expect("auth")
        .is_none());
    assert_eq!(
        DeviceStore::list(&store)
            .await
            .expect("list")
            .iter()
            .map(|d| d.name.as_str())
            .collect::<Vec<_>>(),
        ["wall"]
    );
    // A revoked name can be paired again with a new token; the revocation itself is final.
    store.add(&phone, "hash-phone-2").await.expect("re-add");
    assert!(store
        .authenticate("hash-phone-2", used)
        .await
        .expect("auth")
        .is_some());
    let message = refused(
        &store,
        "UPDATE devices SET revoked_at = NULL WHERE token_hash = 'hash-phone'",
    )
    .await;
    assert!(message.contains("a revocation is final"), "{message}");
    let message = refused(
        &store,
        "UPDATE devices SET scope = 'control' WHERE name = 'wall'",
    )
    .await;
    assert!(
        message.contains("keeps its name, scope and token"),
        "{message}"
    );
}

// ---------------------------------------------------------------------------------------------
// One-time pairing links.
// ---------------------------------------------------------------------------------------------

async fn a_pairing_link_pairs_one_device_once_before_it_lapses(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let made = t0();
    let link = PairingLink::new(Scope::Read, "cli", made);
    store.create_pairing("code-1", &link).await.expect("create");
    assert_eq!(
        store.pairing("code-1").await.expect("read"),
        Some(link.clone())
    );
    assert_eq!(store.pairing("code-x").await.expect("read"), None);
    assert_eq!(
        store
            .redeem_pairing("code-x", "tablet", "hash-t", made)
            .await
            .expect("redeem"),
        Redemption::Unknown
    );

    // A live device's name is refused and the link stays usable.
    let phone = Device {
        name: "phone".to_owned(),
        scope: Scope::Control,
        created_at: made,
        last_used_at: None,
    };
    store.add(&phone, "hash-phone").await.expect("add");
    let at = made + Duration::minutes(3);
    assert_eq!(
        store
            .redeem_pairing("code-1", "phone", "hash-t", at)
            .await
            .expect("redeem"),
        Redemption::NameTaken
    );
    assert!(store
        .pairing("code-1")
        .await
        .expect("read")
        .expect("link")
        .usable_at(at));

    let paired = store
        .redeem_pairing("code-1", "kitchen tablet", "hash-t", at)
        .await
        .expect("redeem");
    let Redemption::Paired(device) = paired else {
        panic!("expected a pairing, got {paired:?}");
    };
    assert_eq!(
        (device.name.as_str(), device.scope),
        ("kitchen tablet", Scope::Read)
    );
    let got = store
        .authenticate("hash-t", at)
        .await
        .expect("auth")
        .expect("the new device authenticates");
    assert_eq!(got.scope, Scope::Read, "the link's scope, nothing else");
    assert_eq!(
        store
            .redeem_pairing("code-1", "second", "hash-2", at)
            .await
            .expect("redeem"),
        Redemption::AlreadyUsed {
            device_name: "kitchen tablet".into(),
            used_at: at
        }
    );
    assert!(store
        .authenticate("hash-2", at)
        .await
        .expect("auth")
        .is_none());

    // Ten minutes after it was made, an unused link pairs nobody.
    store
        .create_pairing("code-2", &PairingLink::new(Scope::Control, "cli", made))
        .await
        .expect("create");
    assert_eq!(
        store
            .redeem_pairing("code-2", "late", "hash-late", made + Duration::minutes(10))
            .await
            .expect("redeem"),
        Redemption::Lapsed {
            expires_at: made + Duration::minutes(10)
        }
    );
    assert!(store
        .authenticate("hash-late", made)
        .await
        .expect("auth")
        .is_none());

    // The database keeps a used link used and its terms fixed.
    let message = refused(
        &store,
        "UPDATE pairing_links SET used_at = NULL, device_name = NULL WHERE code_hash = 'code-1'",
    )
    .await;
    assert!(message.contains("pairs one device once"), "{message}");
    let message = refused(
        &store,
        "UPDATE pairing_links SET scope = 'read' WHERE code_hash = 'code-2'",
    )
    .await;
    assert!(message.contains("terms never change"), "{message}");
    let message = refused(&store, "UPDATE pairing_links SET expires_at = '2999-01-01T00:00:00.000000000Z' WHERE code_hash = 'code-2'").await;
    assert!(message.contains("terms never change"), "{message}");
}

async fn concurrent_redemptions_of_one_link_pair_one_device(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    for round in 0..3 {
        let code = format!("code-{round}");
        store
            .create_pairing(&code, &PairingLink::new(Scope::Control, "cli", t0()))
            .await
            .expect("create");
        let barrier = Arc::new(Barrier::new(10));
        let mut tasks = Vec::new();
        for i in 0..10 {
            let (store, barrier, code) = (store.clone(), barrier.clone(), code.clone());
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                store
                    .redeem_pairing(
                        &code,
                        &format!("browser-{round}-{i}"),
                        &format!("hash-{round}-{i}"),
                        t0() + Duration::seconds(1),
                    )
                    .await
                    .expect("redeem")
            }));
        }
        let mut paired = 0;
        for task in tasks {
            match task.await.expect("task") {
                Redemption::Paired(_) => paired += 1,
                Redemption::AlreadyUsed { .. } => {}
                other => panic!("round {round}: unexpected {other:?}"),
            }
        }
        assert_eq!(paired, 1, "round {round}");
    }
    assert_eq!(DeviceStore::list(&store).await.expect("list").len(), 3);
}

// ---------------------------------------------------------------------------------------------
// The suite, once per engine.
// ---------------------------------------------------------------------------------------------

/// Every engine-generic test body of this module, with its runtime.
macro_rules! suite {
    ($engine:expr) => {
        engine_tests! { $engine;
            #[tokio::test] devices_add_authenticate_list_revoke,
            #[tokio::test] a_pairing_link_pairs_one_device_once_before_it_lapses,
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            concurrent_redemptions_of_one_link_pair_one_device,
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
