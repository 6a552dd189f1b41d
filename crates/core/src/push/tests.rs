use chrono::TimeZone;
use serde_json::json;

use super::*;
use crate::ports::NewApproval;
use crate::wire::{ApprovalKind, Card, Effect, RunMessage};

/// A real browser's subscription keys (RFC 8291 Appendix A's user agent).
const P256DH: &str =
    "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";
const AUTH: &str = "BTBZMqHH6r4Tts7J_aSIgg";

fn at(h: u32, m: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 2, h, m, 0).unwrap()
}

fn subscription(endpoint: &str) -> serde_json::Value {
    json!({"endpoint": endpoint, "expirationTime": null, "keys": {"p256dh": P256DH, "auth": AUTH}})
}

fn row(status: ApprovalStatus) -> Approval {
    let mut row = NewApproval {
        id: "0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f".into(),
        kind: ApprovalKind::Destructive,
        tool: "trash_email".into(),
        args: json!({"ids": ["m1"]}),
        args_canonical: r#"{"ids":["m1"]}"#.into(),
        call_hash: "ab".repeat(32),
        items: vec!["m1".into()],
        card: Card {
            title: "Trash 1 email".into(),
            action: "Trash 1 email".into(),
            effect: Effect::Destructive,
            lines: vec!["Secret subject — boss@example.com".into()],
            undo_tool: None,
            undo_window_days: None,
            request: "trash it".into(),
            undo_note: None,
            undo_action: None,
            preview: Vec::new(),
            overlaps: Vec::new(),
            items_arg: None,
            editable: Vec::new(),
            trail: Vec::new(),
            flags: Vec::new(),
        },
        run_id: "run".into(),
        context_summary: "trash it".into(),
        created_at: at(14, 0),
        expires_at: at(15, 0),
        preconditions: vec![],
        passkey_required: false,
        requested_by: None,
    }
    .pending_view();
    row.status = status;
    row
}

#[test]
fn a_browsers_subscription_parses() {
    let sub = NewSubscription::parse(
        &subscription("https://fcm.googleapis.com/fcm/send/abc"),
        at(14, 0),
    )
    .unwrap();
    assert_eq!(
        sub.endpoint.as_str(),
        "https://fcm.googleapis.com/fcm/send/abc"
    );
    assert_eq!(sub.keys.p256dh()[0], 0x04);
    assert_eq!(sub.keys.auth().len(), 16);
    assert_eq!(sub.keys.p256dh_text(), P256DH);
    assert_eq!(sub.keys.auth_text(), AUTH);
    assert_eq!(sub.expires_at, None);
    // Padding is allowed.
    let padded = json!({"endpoint": "https://p.example/x", "keys": {"p256dh": format!("{P256DH}="), "auth": format!("{AUTH}==")}});
    assert!(NewSubscription::parse(&padded, at(14, 0)).is_ok());
    let expiring = json!({"endpoint": "https://p.example/x", "expirationTime": 1_900_000_000_000.0_f64, "keys": {"p256dh": P256DH, "auth": AUTH}});
    assert_eq!(
        NewSubscription::parse(&expiring, at(14, 0))
            .unwrap()
            .expires_at,
        DateTime::from_timestamp_millis(1_900_000_000_000)
    );
}

#[test]
fn only_https_or_loopback_http_endpoints() {
    for good in [
        "https://push.example.net/x",
        "http://127.0.0.1:9000/push/1",
        "http://localhost:9000/p",
        "http://[::1]:9000/p",
    ] {
        assert!(PushEndpoint::parse(good).is_ok(), "{good}");
    }
    for (bad, why) in [
        ("http://push.example.net/x", "https"),
        ("ftp://push.example.net/x", "https"),
        ("push.example.net/x", "absolute"),
        ("https:///x", "no host"),
        ("https://user:pw@push.example.net/x", "user name"),
        ("https://push.example.net/a b", "whitespace"),
        ("http://127.0.0.1.example.net/x", "https"),
        ("https://169.254.169.254/latest", "link-local"),
        ("https://10.0.0.5/push", "private"),
        ("https://192.168.1.1/push", "private"),
        ("https://[fe80::1]/push", "link-local"),
        ("https://0.0.0.0/push", "unspecified"),
        ("https://push.example.net/\u{202e}x", "ASCII"),
        ("https://pùsh.example.net/x", "ASCII"),
        ("https://2130706433/push", "as a number"),
        ("https://0x7f000001/push", "as a number"),
        ("https://127.1/push", "as a number"),
        ("https://0177.0.0.1/push", "as a number"),
        ("https://push.0x10/push", "as a number"),
    ] {
        let err = PushEndpoint::parse(bad).unwrap_err().to_string();
        assert!(err.contains(why), "{bad}: {err}");
    }
    let long = format!("https://p.example/{}", "a".repeat(ENDPOINT_MAX_BYTES));
    assert!(PushEndpoint::parse(&long)
        .unwrap_err()
        .to_string()
        .contains("longer"));
}

#[test]
fn bad_keys_and_shapes_are_refused_by_name() {
    let short = json!({"endpoint": "https://p.example/x", "keys": {"p256dh": AUTH, "auth": AUTH}});
    let err = NewSubscription::parse(&short, at(14, 0)).unwrap_err();
    assert!(
        matches!(err, SubscriptionError::Key { key: "p256dh", .. }),
        "{err}"
    );
    let compressed = format!("A{}", &P256DH[1..]);
    let err = PushKeys::parse(&compressed, AUTH).unwrap_err().to_string();
    assert!(err.contains("0x04") || err.contains("base64url"), "{err}");
    let err = PushKeys::parse(P256DH, "not base64!").unwrap_err();
    assert!(
        matches!(err, SubscriptionError::Key { key: "auth", .. }),
        "{err}"
    );
    let err = PushKeys::parse(P256DH, "AAAA").unwrap_err().to_string();
    assert!(err.contains("16"), "{err}");
    for shape in [
        json!({"endpoint": "https://p.example/x"}),
        json!({"endpoint": "https://p.example/x", "keys": {"p256dh": P256DH, "auth": AUTH}, "extra": 1}),
        json!({"endpoint": 5, "keys": {"p256dh": P256DH, "auth": AUTH}}),
        json!({"endpoint": "https://p.example/x", "expirationTime": -1, "keys": {"p256dh": P256DH, "auth": AUTH}}),
    ] {
        assert!(
            matches!(
                NewSubscription::parse(&shape, at(14, 0)),
                Err(SubscriptionError::Shape(_))
            ),
            "{shape}"
        );
    }
}

#[test]
fn one_endpoint_has_one_spelling() {
    let spelled = |url: &str| PushEndpoint::parse(url).unwrap().as_str().to_owned();
    let one = spelled("https://push.example.org/x");
    for variant in [
        "HTTPS://PUSH.example.org/x",
        "https://push.example.org:443/x",
        "https://push.example.org/x#",
        "https://push.example.org/x#frag",
    ] {
        assert_eq!(spelled(variant), one, "{variant}");
    }
    assert_eq!(
        spelled("https://push.example.org"),
        "https://push.example.org/"
    );
    assert_eq!(
        spelled("http://127.0.0.1:80/p?q=1"),
        "http://127.0.0.1/p?q=1"
    );
}

#[test]
fn an_expiration_already_past_is_refused() {
    let past = json!({"endpoint": "https://p.example/x", "expirationTime": 1000.0, "keys": {"p256dh": P256DH, "auth": AUTH}});
    let err = NewSubscription::parse(&past, at(14, 0))
        .unwrap_err()
        .to_string();
    assert!(err.contains("already passed"), "{err}");
}

#[test]
fn the_vapid_audience_is_the_endpoints_origin() {
    let origin = |url: &str| PushEndpoint::parse(url).unwrap().origin();
    assert_eq!(
        origin("https://Push.Example.net/x/y?z"),
        "https://push.example.net"
    );
    assert_eq!(
        origin("https://push.example.net:443/x"),
        "https://push.example.net"
    );
    assert_eq!(
        origin("https://push.example.net:8443/x"),
        "https://push.example.net:8443"
    );
    assert_eq!(
        origin("http://127.0.0.1:9000/push/1"),
        "http://127.0.0.1:9000"
    );
}

#[test]
fn a_waiting_card_pushes_its_title_and_link_never_its_lines() {
    let pending = row(ApprovalStatus::Pending);
    let message =
        PushMessage::for_event(&Event::ApprovalRequested(pending.clone()), at(14, 0)).unwrap();
    let payload: serde_json::Value = serde_json::from_str(&message.payload()).unwrap();
    assert_eq!(
        payload,
        json!({
            "type": "approval.requested",
            "approval_id": pending.id,
            "title": "Trash 1 email",
            "url": format!("/activity/{}", pending.id),
        })
    );
    assert!(!message.payload().contains("Secret subject"));
    assert!(!message.payload().contains("m1"));
    assert_eq!(message.urgency(), "high");
    assert_eq!(message.topic(), "0b1c2d3e4f50461788293a4b5c6d7e8f");
    assert_eq!(message.topic().len(), 32);
    // TTL runs until the card's expiry.
    assert_eq!(message.ttl_secs(at(14, 0)), 3600);
    assert_eq!(message.ttl_secs(at(14, 30)), 1800);
    assert_eq!(message.ttl_secs(at(16, 0)), 0);
}

#[test]
fn a_decided_or_lapsed_card_pushes_its_closing_once_per_kind() {
    for (event, outcome) in [
        (
            Event::ApprovalResponded(row(ApprovalStatus::Approved)),
            "approved",
        ),
        (
            Event::ApprovalResponded(row(ApprovalStatus::Rejected)),
            "rejected",
        ),
        (
            Event::ApprovalLapsed(row(ApprovalStatus::Expired)),
            "lapsed",
        ),
    ] {
        let message = PushMessage::for_event(&event, at(14, 10)).unwrap();
        assert_eq!(message.kind, PushKind::Closed);
        assert_eq!(message.outcome.as_deref(), Some(outcome));
        assert_eq!(message.urgency(), "normal");
        assert_eq!(message.topic(), "0b1c2d3e4f50461788293a4b5c6d7e8f");
        assert_eq!(message.ttl_secs(at(14, 10)), CLOSED_TTL_SECS);
        let payload: serde_json::Value = serde_json::from_str(&message.payload()).unwrap();
        assert_eq!(payload["type"], "approval.closed");
        assert_eq!(payload["outcome"], outcome);
    }
    // The execution's and the undo's later updates of an approved row push nothing: the
    // decision's own event closed the card.
    for execution in [
        crate::wire::Execution::Executing,
        crate::wire::Execution::Executed,
        crate::wire::Execution::Failed,
        crate::wire::Execution::Unknown,
    ] {
        let mut ran = row(ApprovalStatus::Approved);
        ran.execution = execution;
        assert!(
            PushMessage::for_event(&Event::ApprovalResponded(ran), at(14, 10)).is_none(),
            "{execution:?}"
        );
    }
    // A pending row's update and a run's words push nothing.
    assert!(PushMessage::for_event(
        &Event::ApprovalResponded(row(ApprovalStatus::Pending)),
        at(14, 0)
    )
    .is_none());
    let words = Event::RunMessage(RunMessage {
        conversation_id: "c".into(),
        run_id: "r".into(),
        text: "done".into(),
        approval_id: None,
    });
    assert!(PushMessage::for_event(&words, at(14, 0)).is_none());
}

#[test]
fn retries_back_off_doubling_to_ten_minutes_and_honour_retry_after() {
    let secs = |attempt, after| retry_delay(attempt, after).as_secs();
    assert_eq!(secs(1, None), 5);
    assert_eq!(secs(2, None), 10);
    assert_eq!(secs(3, None), 20);
    assert_eq!(secs(8, None), 600);
    assert_eq!(secs(40, None), 600);
    assert_eq!(secs(1, Some(120)), 120);
    assert_eq!(secs(8, Some(30)), 600);
    assert_eq!(secs(1, Some(1_000_000)), 3600);
}

#[test]
fn kinds_round_trip_their_stored_form() {
    for kind in [PushKind::Requested, PushKind::Closed] {
        assert_eq!(PushKind::parse(kind.as_str()), Some(kind));
    }
    assert_eq!(PushKind::parse("other"), None);
}

/// A name is judged by what it resolves to: any internal address refuses it, except loopback
/// for a name of this machine (`localhost`, the tests' push service).
#[test]
fn a_name_that_resolves_to_an_internal_address_is_refused() {
    let at = |ip: &str| std::net::SocketAddr::new(ip.parse().unwrap(), 443);
    assert_eq!(
        admit_resolved(
            "push.example.net",
            vec![at("93.184.216.34"), at("2606:2800::1")]
        )
        .unwrap()
        .len(),
        2
    );
    for (host, addrs) in [
        (
            "push.example.net",
            vec![at("93.184.216.34"), at("10.0.0.7")],
        ),
        ("metadata.example", vec![at("169.254.169.254")]),
        ("vm", vec![at("127.0.0.1")]),
        ("v6.example", vec![at("::ffff:192.168.0.1")]),
    ] {
        let err = admit_resolved(host, addrs).unwrap_err();
        assert!(
            err.contains("private, link-local or unspecified"),
            "{host}: {err}"
        );
        assert!(err.contains(host), "{err}");
    }
    assert!(admit_resolved("localhost", vec![at("127.0.0.1"), at("::1")]).is_ok());
    assert!(admit_resolved("localhost", vec![at("10.0.0.1")]).is_err());
    assert!(admit_resolved("push.example.net", Vec::new()).is_err());
}

#[test]
fn an_approval_of_some_items_closes_with_the_count_and_never_the_items() {
    let mut approved = row(ApprovalStatus::Approved);
    approved.approved_items = Some(vec![0, 2]);
    approved.items = vec!["m1".into(), "m2".into(), "m3".into()];
    let push = PushMessage::for_event(&Event::ApprovalResponded(approved.clone()), at(10, 5))
        .expect("a closing push");
    assert_eq!(push.outcome.as_deref(), Some("approved"));
    assert_eq!(push.approved_share.as_deref(), Some("2 of 3"));
    let json = serde_json::to_string(&push).unwrap();
    assert!(!json.contains("m2"), "{json}");
    // A full approval carries no count.
    let whole = row(ApprovalStatus::Approved);
    let push = PushMessage::for_event(&Event::ApprovalResponded(whole), at(10, 5)).unwrap();
    assert_eq!(push.approved_share, None);
    assert!(!serde_json::to_string(&push)
        .unwrap()
        .contains("approved_share"));
}
