//! Consent signed over the exact call (docs/adr/0124-signed-consent.md), with a real server, its
//! SQLite database, the CLI and a software passkey:
//! - an approval of 2 of 3 emails signed by a passkey exports a bundle (`iris audit export
//!   --out`) that `iris audit verify --bundle` checks with no database: exit 0 pinned to the
//!   fingerprint `iris passkeys list` shows; 12 after the call is changed back to all three
//!   emails or pinned to another key; a rejection's bundle is "not signed", 11;
//! - two overlapping ceremonies answered by one passkey and committed out of order: the lower
//!   signature counter is refused (403, the card stays pending) and the stored counter is not
//!   lowered.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::passkeys::{approve, halt, register, world, ORIGIN};
use crate::support::authenticator::SoftAuthenticator;
use crate::support::{Client, Iris, World};

/// `key`'s answer to a challenge for approving `items` of card `id`.
async fn answer(
    client: &Client,
    token: &str,
    key: &mut SoftAuthenticator,
    id: &str,
    items: Option<&[u32]>,
) -> Value {
    let body = items.map_or_else(|| json!({}), |i| json!({ "items": i }));
    let (status, challenge) = client
        .post(
            &format!("/governance/approvals/{id}/passkey"),
            Some(token),
            body,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{challenge}");
    json!({
        "ceremony_id": challenge["ceremony_id"],
        "credential": key.assert(&challenge["options"], true),
    })
}

/// `iris audit verify ARGS`: its exit code and standard output.
fn audit_verify(world: &World, args: &[&str]) -> (i32, String) {
    let mut all = vec!["audit", "verify"];
    all.extend_from_slice(args);
    let out = world.command(&all).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The stored signature counter of the passkey with `credential_id`.
async fn sign_count(world: &World, credential_id: &str) -> i64 {
    let pool = sqlx::SqlitePool::connect(&world.database_url)
        .await
        .unwrap();
    let count: i64 = sqlx::query_scalar("SELECT sign_count FROM passkeys WHERE credential_id = ?")
        .bind(credential_id)
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    count
}

/// A server whose destructive cards need a passkey, with the laptop's token and one registered
/// software passkey, "Phone".
async fn with_a_passkey() -> (World, Iris, Client, String, SoftAuthenticator) {
    let (world, laptop, _) = world(None).await;
    let server = world.start();
    let client = server.client();
    let mut key = SoftAuthenticator::new("localhost", ORIGIN);
    let (status, body) = register(&client, &laptop, &mut key, "Phone", None).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    (world, server, client, laptop, key)
}

// Needs a process: the CLI (`iris audit export|verify`, `iris passkeys list`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_bundle_verifies_offline_and_fails_after_a_signed_change() {
    let (world, _server, client, laptop, mut key) = with_a_passkey().await;
    let listed = String::from_utf8(world.run_ok(&["passkeys", "list"])).unwrap();
    let fingerprint = listed
        .split_whitespace()
        .find(|w| w.starts_with("SHA256:"))
        .unwrap_or_else(|| panic!("no fingerprint in {listed}"))
        .to_string();

    // Approve 2 of the 3 promo emails with the passkey.
    let id = halt(&client, &laptop).await;
    let signed = answer(&client, &laptop, &mut key, &id, Some(&[0, 2])).await;
    let (status, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&laptop),
            json!({"decision": "approve", "items": [0, 2], "passkey": signed}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let row = client.wait_execution(&id, &laptop, "executed").await;

    let file = world.dir.path().join("bundle.json");
    let file_text = file.to_str().unwrap();
    world.run_ok(&["audit", "export", &id, "--out", file_text]);
    let bundle: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(bundle["format"], "iris-consent-bundle/1", "{bundle}");
    assert_eq!(bundle["passkey"]["fingerprint"], fingerprint.as_str());
    assert_eq!(bundle["passkey"]["rule"], "iris-consent-v1");
    assert_eq!(bundle["ran"], row["decided_call"], "{bundle}");
    assert_eq!(bundle["approval"]["call_hash"], row["call_hash"]);
    assert_eq!(bundle["decision"]["approved_items"], json!([0, 2]));
    // Printed to standard output without --out: the same bundle.
    let printed: Value = serde_json::from_slice(&world.run_ok(&["audit", "export", &id])).unwrap();
    assert_eq!(printed, bundle);

    let (code, said) = audit_verify(
        &world,
        &["--bundle", file_text, "--credential", &fingerprint],
    );
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("the signature verifies"), "{said}");
    assert!(said.contains("the public key is pinned"), "{said}");
    // Without a pinned key it fails closed: 12, naming the fingerprint to pin.
    let (code, said) = audit_verify(&world, &["--bundle", file_text]);
    assert_eq!(code, 12, "{said}");
    assert!(
        said.contains("no key is pinned") && said.contains(&fingerprint),
        "{said}"
    );
    // From the database, pinned by the stored passkey.
    let (code, said) = audit_verify(&world, &[&id]);
    assert_eq!(code, 0, "{said}");

    // The bundle says all three were approved: the signature covers two, so 12.
    let mut forged = bundle.clone();
    forged["ran"] = json!({
        "tool": row["tool"], "args": row["args"], "call_hash": row["call_hash"],
    });
    forged["decision"]["approved_items"] = Value::Null;
    let forged_file = world.dir.path().join("forged.json");
    std::fs::write(&forged_file, forged.to_string()).unwrap();
    let (code, said) = audit_verify(
        &world,
        &[
            "--bundle",
            forged_file.to_str().unwrap(),
            "--credential",
            &fingerprint,
        ],
    );
    assert_eq!(code, 12, "{said}");
    assert!(said.contains("MISMATCH"), "{said}");
    // Pinned to another key: 12.
    let other = "SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let (code, said) = audit_verify(&world, &["--bundle", file_text, "--credential", other]);
    assert_eq!(code, 12, "{said}");

    // A rejected card was signed by nobody: its bundle says so, 11.
    let rejected = halt(&client, &laptop).await;
    let (status, body) = client
        .post(
            &format!("/governance/approvals/{rejected}/respond"),
            Some(&laptop),
            json!({"decision": "reject"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let unsigned = world.dir.path().join("unsigned.json");
    world.run_ok(&[
        "audit",
        "export",
        &rejected,
        "--out",
        unsigned.to_str().unwrap(),
    ]);
    let (code, said) = audit_verify(&world, &["--bundle", unsigned.to_str().unwrap()]);
    assert_eq!(code, 11, "{said}");
    assert!(said.contains("not signed"), "{said}");
    // Not a bundle: an error naming the file, not a verdict.
    let (code, said) = audit_verify(
        &world,
        &[
            "--bundle",
            world.database_url.trim_start_matches("sqlite://"),
        ],
    );
    assert_eq!(code, 1, "{said}");
}

// Needs a process: two answers committed in the order a paused phone would send them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_ceremonies_never_lower_the_stored_sign_counter() {
    let (world, _server, client, laptop, mut key) = with_a_passkey().await;
    let second = halt(&client, &laptop).await;
    let third = halt(&client, &laptop).await;
    // The authenticator signs for the second card (counter 1), then the third (counter 2);
    // the third's answer is committed first.
    let earlier = answer(&client, &laptop, &mut key, &second, None).await;
    let later = answer(&client, &laptop, &mut key, &third, None).await;
    let (status, body) = approve(&client, &laptop, &third, Some(&later)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(sign_count(&world, &key.credential_id()).await, 2);
    let (status, body) = approve(&client, &laptop, &second, Some(&earlier)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["code"], "passkey_required", "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("counter"),
        "{body}"
    );
    assert_eq!(body["approval"]["status"], "pending", "{body}");
    assert_eq!(
        sign_count(&world, &key.credential_id()).await,
        2,
        "the stored counter was lowered"
    );
    // A fresh answer (counter 3) approves it.
    let fresh = answer(&client, &laptop, &mut key, &second, None).await;
    let (status, body) = approve(&client, &laptop, &second, Some(&fresh)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(sign_count(&world, &key.credential_id()).await, 3);
}
