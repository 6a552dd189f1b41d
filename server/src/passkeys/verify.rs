//! `iris audit verify APPROVAL_ID` (at the server, against the database): the approval's
//! consent bundle made from the database ([`bundle::export`]) and checked as a bundle file is
//! ([`bundle::verify`]), its key pinned by the passkey's stored row (kept after it is removed),
//! plus what only the database can say: the row's call hash matches its pinned call, and under
//! the rule before consent challenges, the recorded challenge was made for this approval and
//! call.

use iris_core::canonical::call_hash;
use iris_core::passkey::CeremonyPurpose;
use iris_core::ports::{ApprovalStore, PasskeyStore};

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
    let Some(approval) = store.approval(id).await? else {
        anyhow::bail!("approval `{id}` does not exist");
    };
    let recomputed = call_hash(&approval.tool, &approval.args);
    if recomputed != approval.call_hash {
        return Ok(BundleVerdict::Mismatch(format!(
            "the row's call hash {} does not match its pinned call ({recomputed})",
            approval.call_hash
        )));
    }
    let exported = bundle::export(store, id).await?;
    let passkey = &exported["passkey"];
    if passkey["rule"] == RECORDED_CHALLENGE_RULE {
        let ran = exported["ran"]["call_hash"].as_str().unwrap_or_default();
        let stored = store.audit(Some(id)).await?.into_iter().find_map(|e| {
            e.result["passkey"]["ceremony_id"]
                .as_str()
                .map(str::to_owned)
        });
        let ceremony = match stored {
            Some(ceremony_id) => store.ceremony(&ceremony_id).await?,
            None => None,
        };
        let bound = ceremony.is_some_and(|c| {
            c.purpose == CeremonyPurpose::Approve
                && c.approval_id.as_deref() == Some(id)
                && c.call_hash.as_deref() == Some(ran)
        });
        if !bound {
            return Ok(BundleVerdict::Mismatch(format!(
                "the recorded challenge was not made for approval `{id}` and call hash {ran}"
            )));
        }
    }
    if !passkey.is_null() && passkey["fingerprint"].is_null() {
        return Ok(BundleVerdict::Mismatch(format!(
            "the signature names credential {}, which was never registered here",
            passkey["credential_id"]
        )));
    }
    let removed = store
        .passkeys(true)
        .await?
        .into_iter()
        .find(|p| Some(p.credential_id.as_str()) == passkey["credential_id"].as_str())
        .and_then(|p| p.removed_at);
    let pin = pinned.or_else(|| passkey["fingerprint"].as_str());
    let mut verdict = bundle::verify(&exported, pin);
    if let (BundleVerdict::Verified(lines), Some(at)) = (&mut verdict, removed) {
        lines.push(format!(
            "the passkey was removed {} (its key is kept so old decisions can still be checked).",
            iris_core::wire::when_utc(at)
        ));
    }
    Ok(verdict)
}
