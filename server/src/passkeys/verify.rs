//! `iris audit verify APPROVAL_ID` (at the server, against the database): the decision's
//! passkey checked again, long after, from what its audit entry kept (credential id,
//! `clientDataJSON`, `authenticatorData`, signature) against the challenge recorded for that
//! approval and call hash and the passkey's stored public key (kept after it is removed).

use iris_core::canonical::call_hash;
use iris_core::passkey::{CeremonyPurpose, PasskeyCheck};
use iris_core::ports::{ApprovalStore, PasskeyStore};
use iris_core::wire::{ApprovalStatus, AuditKind};
use serde_json::{json, Value};

use super::Passkeys;

/// What `iris audit verify` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The signature verifies: which passkey approved which call.
    Verified(String),
    /// The approval was decided without a passkey (none was required, or it was rejected).
    NoPasskey(String),
    /// Something does not verify: what.
    Failed(String),
}

/// Checks the passkey of approval `id`'s decision again.
///
/// # Errors
/// Storage failed, or no approval has this id.
pub async fn verify<S>(store: &S, passkeys: &Passkeys, id: &str) -> anyhow::Result<Verdict>
where
    S: ApprovalStore + PasskeyStore,
{
    let Some(approval) = store.approval(id).await? else {
        anyhow::bail!("approval `{id}` does not exist");
    };
    let recomputed = call_hash(&approval.tool, &approval.args);
    if recomputed != approval.call_hash {
        return Ok(Verdict::Failed(format!(
            "the row's call hash {} does not match its pinned call ({recomputed})",
            approval.call_hash
        )));
    }
    let decision = store
        .audit(Some(id))
        .await?
        .into_iter()
        .find(|e| e.kind == AuditKind::Decision);
    let Some(decision) = decision else {
        return Ok(Verdict::NoPasskey(format!(
            "approval `{id}` has no decision ({}).",
            approval.status.as_str()
        )));
    };
    let proof = &decision.result["passkey"];
    if proof.is_null() {
        let why = if approval.status == ApprovalStatus::Approved {
            "approved without a passkey (none was required for this card)"
        } else {
            "not approved, so no passkey was needed"
        };
        return Ok(Verdict::NoPasskey(format!(
            "approval `{id}` ({}) was {why}; decided by {} via {} at {}.",
            approval.tool,
            decision.actor,
            decision.surface.as_deref().unwrap_or("?"),
            decision.at.format("%Y-%m-%d %H:%M:%S UTC")
        )));
    }
    let text = |key: &str| proof[key].as_str().unwrap_or_default().to_string();
    let Some(ceremony) = store.ceremony(&text("ceremony_id")).await? else {
        return Ok(Verdict::Failed(format!(
            "the challenge `{}` the decision names is not recorded",
            text("ceremony_id")
        )));
    };
    if ceremony.purpose != CeremonyPurpose::Approve
        || ceremony.approval_id.as_deref() != Some(id)
        || ceremony.call_hash.as_deref() != Some(approval.call_hash.as_str())
        || text("call_hash") != approval.call_hash
    {
        return Ok(Verdict::Failed(format!(
            "the challenge `{}` was not made for approval `{id}` and call hash {}",
            ceremony.id, approval.call_hash
        )));
    }
    let credential_id = text("credential_id");
    let credential = json!({
        "id": credential_id,
        "rawId": credential_id,
        "type": "public-key",
        "response": {
            "clientDataJSON": proof["client_data_json"],
            "authenticatorData": proof["authenticator_data"],
            "signature": proof["signature"],
            "userHandle": proof.get("user_handle").cloned().unwrap_or(Value::Null),
        },
        "extensions": {},
    });
    // Checked against the site the decision was made on (kept with it), so a later change of
    // IRIS_PUBLIC_URL does not make old decisions look forged.
    let recorded = proof["origin"]
        .as_str()
        .map(|origin| Passkeys::for_origin(origin, passkeys.policy));
    let checker = recorded.as_ref().unwrap_or(passkeys);
    if let Some(why) = checker.off_reason() {
        return Ok(Verdict::Failed(format!(
            "approval `{id}`'s passkey cannot be checked here: {why}"
        )));
    }
    if let Err(e) = checker.verify(&ceremony.state, &credential) {
        return Ok(Verdict::Failed(format!(
            "the passkey signature of approval `{id}` does not verify: {e}"
        )));
    }
    let stored = store
        .passkeys(true)
        .await?
        .into_iter()
        .find(|p| p.credential_id == credential_id);
    let Some(stored) = stored else {
        return Ok(Verdict::Failed(format!(
            "the signature verifies, but no passkey with credential {credential_id} was ever registered here"
        )));
    };
    let removed = stored
        .removed_at
        .map(|t| format!(", removed {}", t.format("%Y-%m-%d %H:%M UTC")))
        .unwrap_or_default();
    Ok(Verdict::Verified(format!(
        "approval `{id}`: {} with call hash {} was approved by passkey \"{}\" (credential {credential_id}, added {} by {}{removed}) via {} at {}; the signature verifies against its challenge.",
        approval.tool,
        approval.call_hash,
        stored.name,
        stored.created_at.format("%Y-%m-%d %H:%M UTC"),
        stored.added_by,
        decision.surface.as_deref().unwrap_or("?"),
        decision.at.format("%Y-%m-%d %H:%M:%S UTC"),
    )))
}
