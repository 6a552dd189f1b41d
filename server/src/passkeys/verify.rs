//! `iris audit verify APPROVAL_ID` (at the server, against the database): the approval's
//! consent bundle made from the database ([`bundle::export`], the one read of it) and checked as
//! a bundle file is ([`bundle::verify`]), its key pinned by the passkey's stored row (kept after
//! it is removed), plus what only the database vouches for: the request's call hash matches its
//! pinned call, and under the rule before consent challenges, the recorded challenge was made
//! for this approval and call (`passkey.made_for`).

use iris_core::canonical::call_hash;
use iris_core::ports::{ApprovalStore, PasskeyStore};
use serde_json::Value;

use super::bundle::{self, BundleVerdict, RECORDED_CHALLENGE_RULE};

/// Checks the consent of approval `id` from the database; `pinned` overrides the fingerprint
/// of the stored passkey.
///
/// # Errors
/// Storage failed, or no approval has this id.
pub async fn verify<S>(store: &S, id: &str, pinned: Option<&str>) -> anyhow::Result<BundleVerdict>
where
    S: ApprovalStore + PasskeyStore,
{
    let exported = bundle::export(store, id).await?;
    Ok(database_checks(&exported, pinned))
}

/// The verdict on a bundle the database made: its own checks first, then the bundle's.
fn database_checks(exported: &Value, pinned: Option<&str>) -> BundleVerdict {
    let (request, passkey) = (&exported["approval"], &exported["passkey"]);
    let (tool, hash) = (
        request["tool"].as_str().unwrap_or_default(),
        request["call_hash"].as_str().unwrap_or_default(),
    );
    let recomputed = call_hash(tool, &request["args"]);
    if recomputed != hash {
        return BundleVerdict::Mismatch(format!(
            "the row's call hash {hash} does not match its pinned call ({recomputed})"
        ));
    }
    if passkey["rule"] == RECORDED_CHALLENGE_RULE {
        let made_for = &passkey["made_for"];
        let ran = &exported["ran"]["call_hash"];
        if made_for["purpose"] != "approve"
            || made_for["approval_id"] != request["id"]
            || &made_for["call_hash"] != ran
        {
            return BundleVerdict::Mismatch(format!(
                "the recorded challenge was not made for approval {} and call hash {ran}",
                request["id"]
            ));
        }
    }
    if !passkey.is_null() && passkey["fingerprint"].is_null() {
        return BundleVerdict::Mismatch(format!(
            "the signature names credential {}, which was never registered here",
            passkey["credential_id"]
        ));
    }
    let pin = pinned.or_else(|| passkey["fingerprint"].as_str());
    let mut verdict = bundle::verify(exported, pin);
    if let (BundleVerdict::Verified(lines), Some(at)) =
        (&mut verdict, passkey["removed_at"].as_str())
    {
        let at = chrono::DateTime::parse_from_rfc3339(at)
            .map(|t| iris_core::wire::when_utc(t.with_timezone(&chrono::Utc)))
            .unwrap_or_else(|_| at.to_string());
        lines.push(format!(
            "the passkey was removed {at} (its key is kept so old decisions can still be checked)."
        ));
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn old_rule(made_for: Value) -> Value {
        let args = json!({"ids": ["m1"]});
        let hash = call_hash("trash_email", &args);
        json!({
            "approval": {"id": "a-1", "tool": "trash_email", "args": args, "call_hash": hash},
            "ran": {"tool": "trash_email", "args": args, "call_hash": hash},
            "passkey": {"rule": RECORDED_CHALLENGE_RULE, "fingerprint": "SHA256:x", "made_for": made_for},
        })
    }

    /// Under the rule before consent challenges only the ceremony's row ties the signature to
    /// the call: a challenge recorded for another approval or call is a mismatch from the
    /// database, before any signature is checked.
    #[test]
    fn an_old_rule_challenge_made_for_another_call_is_a_mismatch() {
        let hash = call_hash("trash_email", &json!({"ids": ["m1"]}));
        for made_for in [
            json!({"purpose": "approve", "approval_id": "a-2", "call_hash": hash}),
            json!({"purpose": "approve", "approval_id": "a-1", "call_hash": "other"}),
            json!({"purpose": "manage", "approval_id": "a-1", "call_hash": hash}),
            Value::Null,
        ] {
            let verdict = database_checks(&old_rule(made_for.clone()), None);
            assert!(
                matches!(&verdict, BundleVerdict::Mismatch(why) if why.contains("recorded challenge")),
                "{made_for}: {verdict:?}"
            );
        }
        // Made for this approval and call, it goes on to the bundle's own checks.
        let verdict = database_checks(
            &old_rule(json!({"purpose": "approve", "approval_id": "a-1", "call_hash": hash})),
            None,
        );
        assert!(
            !matches!(&verdict, BundleVerdict::Mismatch(why) if why.contains("recorded challenge")),
            "{verdict:?}"
        );
    }

    #[test]
    fn a_row_whose_hash_is_not_its_call_is_a_mismatch() {
        let mut bundle = old_rule(Value::Null);
        bundle["approval"]["call_hash"] = json!("forged");
        let verdict = database_checks(&bundle, None);
        assert!(
            matches!(&verdict, BundleVerdict::Mismatch(why) if why.contains("does not match its pinned call"))
        );
    }
}
