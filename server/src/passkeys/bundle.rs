//! The consent bundle (docs/adr/0124-signed-consent.md): `iris audit export ID` writes what an
//! approval's decision can be checked by, from the database; `iris audit verify --bundle FILE`
//! checks it with no database and no server.
//!
//! A bundle (`"format": "iris-consent-bundle/1"`) holds:
//! - `approval`: the request's terms (id, tool, args, call hash, items, the card's title and
//!   lines, when asked and until when);
//! - `decision`: the answer (`approve`/`reject`, or `null` for a lapse), who, where, when, the
//!   reason, the items kept and the fields edited;
//! - `ran`: the call that ran or will run (`tool`, `args`, `call_hash`), `null` unless approved;
//! - `passkey`: `null` when no passkey approved it; else the rule, the credential (name, id,
//!   algorithm, SubjectPublicKeyInfo and fingerprint), the site (`rp_id`, `origin`), the nonce
//!   (or, under the rule before, the recorded challenge), the authenticator data, client data,
//!   signature and signature counter;
//! - `signed` and `recorded`: which of these fields the signature covers, and which are only
//!   recorded.
//!
//! Verdicts map to exit codes: [`BundleVerdict::Verified`] 0, [`BundleVerdict::NotSigned`] 11,
//! [`BundleVerdict::Mismatch`] 12.

use anyhow::Context;
use base64ct::{Base64UrlUnpadded, Encoding};
use iris_core::canonical::call_hash;
use iris_core::passkey::consent::{ConsentTerms, CONSENT_RULE};
use iris_core::ports::{ApprovalStore, PasskeyStore};
use iris_core::wire::{Approval, ApprovalStatus, AuditKind, Decision};
use serde_json::{json, Value};

use super::assertion::{self, SignedParts};
use super::key::CredentialKey;

/// The bundle's `format`.
pub const BUNDLE_FORMAT: &str = "iris-consent-bundle/1";

/// `passkey.rule` of approvals signed before consent challenges: the challenge was random and
/// recorded by the server for the approval and its call hash.
pub const RECORDED_CHALLENGE_RULE: &str = "recorded-challenge";

/// The fields a consent signature covers (under [`CONSENT_RULE`]): changing any of them makes
/// the check fail. `passkey.public_key` is covered when pinned with `--credential`.
pub const SIGNED: [&str; 13] = [
    "approval.id",
    "decision.decision",
    "ran.tool",
    "ran.args",
    "ran.call_hash",
    "passkey.nonce",
    "passkey.rp_id",
    "passkey.origin",
    "passkey.sign_count",
    "passkey.client_data_json",
    "passkey.authenticator_data",
    "passkey.signature",
    "passkey.public_key",
];

/// The fields that are only recorded: the server's word, not covered by the signature.
pub const RECORDED: [&str; 11] = [
    "approval (its other terms: tool, args, call_hash and items of the request, card, times)",
    "decision.by",
    "decision.surface",
    "decision.at",
    "decision.reason",
    "decision.approved_items",
    "decision.edited_fields",
    "passkey.name",
    "passkey.credential_id",
    "passkey.removed_at",
    "passkey.made_for",
];

/// What checking a bundle found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BundleVerdict {
    /// Exit 0: the signature covers exactly this call and decision; the lines say by which
    /// passkey and what is signed.
    Verified(Vec<String>),
    /// Exit 11: no passkey signed this decision; why.
    NotSigned(String),
    /// Exit 12: something does not match; what.
    Mismatch(String),
}

impl BundleVerdict {
    /// The exit code: 0, 11 or 12.
    pub fn exit_code(&self) -> i32 {
        match self {
            BundleVerdict::Verified(_) => 0,
            BundleVerdict::NotSigned(_) => 11,
            BundleVerdict::Mismatch(_) => 12,
        }
    }
}

/// The bundle of approval `id`, read from `store`: its row, its decision's audit entry, the
/// ceremony the decision answered and the passkey that signed (kept after removal).
///
/// # Errors
/// Storage failed, no approval has this id, or a stored passkey does not parse.
pub async fn export<S>(store: &S, id: &str) -> anyhow::Result<Value>
where
    S: ApprovalStore + PasskeyStore,
{
    let Some(approval) = store.approval(id).await? else {
        anyhow::bail!("approval `{id}` does not exist");
    };
    let entry = store
        .audit(Some(id))
        .await?
        .into_iter()
        .find(|e| e.kind == AuditKind::Decision);
    let decision = match approval.status {
        ApprovalStatus::Approved => Some(Decision::Approve),
        ApprovalStatus::Rejected => Some(Decision::Reject),
        _ => None,
    };
    let ran = (approval.status == ApprovalStatus::Approved).then(|| match &approval.decided_call {
        Some(call) => json!({"tool": call.tool, "args": call.args, "call_hash": call.call_hash}),
        None => {
            json!({"tool": approval.tool, "args": approval.args, "call_hash": approval.call_hash})
        }
    });
    let proof = entry
        .as_ref()
        .map(|e| &e.result["passkey"])
        .filter(|p| !p.is_null());
    let passkey = match proof {
        Some(proof) => Some(passkey_part(store, proof).await?),
        None => None,
    };
    Ok(json!({
        "format": BUNDLE_FORMAT,
        "approval": request_terms(&approval),
        "decision": {
            "decision": decision.map(Decision::as_str),
            "status": approval.status.as_str(),
            "by": approval.responded_by,
            "surface": approval.surface,
            "at": approval.responded_at,
            "reason": approval.reason,
            "approved_items": approval.approved_items,
            "edited_fields": approval.edited_fields,
        },
        "ran": ran,
        "passkey": passkey,
        "signed": if passkey.is_some() { json!(SIGNED) } else { json!([]) },
        "recorded": RECORDED,
    }))
}

/// The request's terms as the bundle records them.
fn request_terms(approval: &Approval) -> Value {
    json!({
        "id": approval.id,
        "kind": approval.kind,
        "tool": approval.tool,
        "args": approval.args,
        "call_hash": approval.call_hash,
        "items": approval.items,
        "title": approval.card.title,
        "lines": approval.card.lines,
        "created_at": approval.created_at,
        "expires_at": approval.expires_at,
    })
}

/// The bundle's `passkey` from the decision's audit record `proof`: the credential's public key
/// from its stored row, the challenge from the ceremony (under the rule before).
async fn passkey_part<S: PasskeyStore>(store: &S, proof: &Value) -> anyhow::Result<Value> {
    let text = |key: &str| proof[key].as_str().unwrap_or_default().to_string();
    let credential_id = text("credential_id");
    let stored = store
        .passkeys(true)
        .await?
        .into_iter()
        .find(|p| p.credential_id == credential_id);
    let (name, key) = match &stored {
        Some(p) => {
            let (key, _) = CredentialKey::from_stored(&p.key).map_err(anyhow::Error::msg)?;
            (Some(p.name.clone()), Some(key))
        }
        None => (None, None),
    };
    let origin = text("origin");
    let rp_id = webauthn_rs::prelude::Url::parse(&origin)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned));
    let consent = proof["rule"].as_str() == Some(CONSENT_RULE);
    // Before consent challenges the ceremony's state recorded a random challenge, and only the
    // ceremony's row tied it to the approval and call (recorded as `made_for`).
    let (challenge, made_for) = if consent {
        (Value::Null, Value::Null)
    } else {
        match store.ceremony(&text("ceremony_id")).await? {
            Some(c) => (
                serde_json::from_str::<Value>(&c.state)
                    .map(|state| state["ast"]["challenge"].clone())
                    .unwrap_or(Value::Null),
                json!({"purpose": c.purpose.as_str(), "approval_id": c.approval_id, "call_hash": c.call_hash}),
            ),
            None => (Value::Null, Value::Null),
        }
    };
    Ok(json!({
        "rule": if consent { CONSENT_RULE } else { RECORDED_CHALLENGE_RULE },
        "name": name,
        "credential_id": credential_id,
        "algorithm": key.as_ref().map(CredentialKey::algorithm),
        "public_key": key.as_ref().map(|k| Base64UrlUnpadded::encode_string(&k.spki())),
        "fingerprint": key.as_ref().map(CredentialKey::fingerprint),
        "rp_id": rp_id,
        "origin": origin,
        "nonce": proof["nonce"],
        "challenge": challenge,
        "made_for": made_for,
        "removed_at": stored.as_ref().and_then(|p| p.removed_at),
        "client_data_json": proof["client_data_json"],
        "authenticator_data": proof["authenticator_data"],
        "signature": proof["signature"],
        "sign_count": proof["counter"],
    }))
}

/// Reads a bundle file.
///
/// # Errors
/// The file cannot be read, is not JSON, or is not a bundle of [`BUNDLE_FORMAT`].
pub fn read(path: &std::path::Path) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the bundle {}", path.display()))?;
    let bundle: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    if bundle["format"] != BUNDLE_FORMAT {
        anyhow::bail!(
            "{} is not a consent bundle (`format` is not `{BUNDLE_FORMAT}`; make one with `iris audit export ID`)",
            path.display()
        );
    }
    Ok(bundle)
}

/// Checks `bundle` with no database or server: the call that ran against its hash, the
/// challenge rebuilt from the signed fields, and WebAuthn §7.2's checks of the assertion with
/// the bundle's public key, which must have the fingerprint `pinned`. Without `pinned` a signed
/// bundle is a mismatch (fail closed: its own key proves nothing about whose passkey signed).
pub fn verify(bundle: &Value, pinned: Option<&str>) -> BundleVerdict {
    match check(bundle, pinned) {
        Ok(verdict) => verdict,
        Err(why) => BundleVerdict::Mismatch(why),
    }
}

fn check(bundle: &Value, pinned: Option<&str>) -> Result<BundleVerdict, String> {
    let id = bundle["approval"]["id"].as_str().unwrap_or("?");
    let passkey = &bundle["passkey"];
    if passkey.is_null() {
        let status = bundle["decision"]["status"].as_str().unwrap_or("?");
        return Ok(BundleVerdict::NotSigned(format!(
            "approval `{id}` ({status}) was not signed by a passkey: the bundle records the \
             server's word only (who answered, where, when), not the owner's signature"
        )));
    }
    let text = |value: &Value, what: &str| {
        value
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("`{what}` is missing"))
    };
    let ran = &bundle["ran"];
    let tool = text(&ran["tool"], "ran.tool")?;
    let hash = text(&ran["call_hash"], "ran.call_hash")?;
    if call_hash(&tool, &ran["args"]) != hash {
        return Err(format!(
            "the call that ran ({tool}) does not have the call hash {hash} the signature covers"
        ));
    }
    if bundle["decision"]["decision"] != "approve" {
        return Err("the decision is not `approve`, and a passkey signs only approvals".into());
    }
    let request = &bundle["approval"];
    let shaped = !bundle["decision"]["approved_items"].is_null()
        || !bundle["decision"]["edited_fields"].is_null();
    if !shaped && (request["call_hash"] != ran["call_hash"] || request["tool"] != ran["tool"]) {
        return Err(
            "the call that ran is not the request's, and no choice of items or edit is recorded"
                .into(),
        );
    }
    let algorithm = text(&passkey["algorithm"], "passkey.algorithm")?;
    let der = Base64UrlUnpadded::decode_vec(&text(&passkey["public_key"], "passkey.public_key")?)
        .map_err(|_| "`passkey.public_key` is not base64url".to_string())?;
    let key = CredentialKey::from_spki(&algorithm, &der)?;
    let fingerprint = key.fingerprint();
    if passkey["fingerprint"] != fingerprint.as_str() {
        return Err(format!(
            "the bundle's public key has the fingerprint {fingerprint}, not the {} it names",
            passkey["fingerprint"]
        ));
    }
    // Fail closed: a bundle's own key proves only that someone signed it, not that the
    // owner's passkey did; without a pinned key the check does not pass.
    let Some(pinned) = pinned else {
        return Err(format!(
            "no key is pinned, so the signature cannot be tied to your passkey: pass \
             --credential {fingerprint} if `iris passkeys list` (or the Devices page) shows that \
             fingerprint for your passkey"
        ));
    };
    if pinned.trim() != fingerprint {
        return Err(format!(
            "the bundle's public key ({fingerprint}) is not the passkey you pinned ({pinned})"
        ));
    }
    let rule = passkey["rule"].as_str().unwrap_or_default();
    let approval_id = text(&request["id"], "approval.id")?;
    let challenge: Vec<u8> = match rule {
        CONSENT_RULE => {
            let nonce = Base64UrlUnpadded::decode_vec(&text(&passkey["nonce"], "passkey.nonce")?)
                .map_err(|_| "`passkey.nonce` is not base64url".to_string())?;
            ConsentTerms {
                approval_id: &approval_id,
                call_hash: &hash,
                decision: Decision::Approve,
                nonce: &nonce,
            }
            .challenge()
            .to_vec()
        }
        RECORDED_CHALLENGE_RULE => Base64UrlUnpadded::decode_vec(
            text(&passkey["challenge"], "passkey.challenge")?.trim_end_matches('='),
        )
        .map_err(|_| "`passkey.challenge` is not base64url".to_string())?,
        other => {
            return Err(format!(
                "the bundle's rule `{other}` is not one this IRIS knows"
            ))
        }
    };
    let origin = text(&passkey["origin"], "passkey.origin")?;
    let rp_id = text(&passkey["rp_id"], "passkey.rp_id")?;
    let host = webauthn_rs::prelude::Url::parse(&origin)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    if host != rp_id && !host.ends_with(&format!(".{rp_id}")) {
        return Err(format!(
            "the origin {origin} is not a site of the relying party {rp_id}"
        ));
    }
    let parts = SignedParts::from_json(passkey)?;
    let expected = assertion::Expected {
        challenge: &challenge,
        origin: &origin,
        rp_id: &rp_id,
    };
    let counter =
        assertion::verify(expected, &key, &parts, 0).map_err(|e| format!("the signature: {e}"))?;
    if passkey["sign_count"].as_u64() != Some(u64::from(counter)) {
        return Err(format!(
            "`passkey.sign_count` is not the counter the authenticator signed ({counter})"
        ));
    }
    let name = passkey["name"].as_str().unwrap_or("(no longer registered)");
    let mut lines = vec![format!(
        "approval `{approval_id}`: {tool} with call hash {hash} was approved by passkey \
         \"{name}\" ({fingerprint}); the signature verifies."
    )];
    if rule == CONSENT_RULE {
        lines.push(format!(
            "signed (changing any fails the check): {}",
            SIGNED.join(", ")
        ));
    } else {
        lines.push(
            "signed by the rule before consent challenges: the signature covers a random \
             challenge the server recorded for this approval and call hash; that binding is \
             the server's record, not the signature"
                .into(),
        );
    }
    lines.push(format!(
        "only recorded (the server's word): {}",
        RECORDED.join(", ")
    ));
    lines.push(format!("the public key is pinned: {fingerprint}."));
    Ok(BundleVerdict::Verified(lines))
}

#[cfg(test)]
mod tests;
