//! The passkey a card may need to be approved (ADR-0118 decision 4; [`crate::passkey`]): the
//! challenge made for one approval and its call hash, and the check of the answer, run inside
//! the decision's unit of work ([`ApprovalService::respond_with_passkey`]) so the row is still
//! pending, its call hash unchanged and the ceremony unused when the decision commits.

use std::sync::Arc;

use base64ct::{Base64UrlUnpadded, Encoding};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::narrow::decided_terms;
use super::{Actor, ApprovalService, RespondError};
use crate::passkey::consent::{self, ConsentTerms, CONSENT_RULE};
use crate::passkey::{
    Assertion, Ceremony, CeremonyPurpose, PasskeyCheck, PasskeyRefusal, PasskeyUse, CEREMONY_SECS,
};
use crate::ports::{DecisionRead, PasskeyStore, StoreError};
use crate::wire::Decision;

/// What the service needs to ask for and check passkeys: the cryptography and the storage of
/// passkeys and ceremonies.
#[derive(Clone)]
pub struct PasskeySettings {
    /// Makes challenges and verifies answers (the server's `webauthn-rs`).
    pub check: Arc<dyn PasskeyCheck>,
    /// The owner's passkeys and the ceremonies.
    pub store: Arc<dyn PasskeyStore>,
}

/// An authentication challenge for the live passkeys, stored as a ceremony that lapses after
/// [`CEREMONY_SECS`] and is used once: for approving (`binding` = approval id and call hash) or
/// for a proof (`None`). `None` when no passkey is registered.
async fn authentication(
    settings: &PasskeySettings,
    binding: Option<(&str, &str)>,
    device: &str,
    now: DateTime<Utc>,
) -> Result<Option<PasskeyChallenge>, StoreError> {
    let keys: Vec<String> = settings
        .store
        .passkeys(false)
        .await?
        .into_iter()
        .map(|p| p.key)
        .collect();
    if keys.is_empty() {
        return Ok(None);
    }
    // An approve's challenge is derived from what is approved (docs/adr/0124-signed-consent.md);
    // a proof's is random.
    let nonce = consent::nonce();
    let challenge = match binding {
        Some((approval_id, call_hash)) => ConsentTerms {
            approval_id,
            call_hash,
            decision: Decision::Approve,
            nonce: &nonce,
        }
        .challenge(),
        None => nonce,
    };
    let (options, state) = settings
        .check
        .challenge(&keys, &challenge)
        .map_err(StoreError::Backend)?;
    let ceremony = Ceremony {
        id: uuid::Uuid::new_v4().to_string(),
        purpose: if binding.is_some() {
            CeremonyPurpose::Approve
        } else {
            CeremonyPurpose::Manage
        },
        approval_id: binding.map(|b| b.0.to_owned()),
        call_hash: binding.map(|b| b.1.to_owned()),
        state,
        nonce: binding.map(|_| Base64UrlUnpadded::encode_string(&nonce)),
        device: device.to_owned(),
        created_at: now,
        expires_at: now + chrono::Duration::seconds(CEREMONY_SECS),
        used_at: None,
    };
    settings.store.start_ceremony(&ceremony).await?;
    Ok(Some(PasskeyChallenge {
        ceremony_id: ceremony.id,
        options,
        expires_at: ceremony.expires_at,
    }))
}

/// A challenge made for one approval: the ceremony's id, the options for the browser, and when
/// it lapses.
#[derive(Debug, Clone, PartialEq)]
pub struct PasskeyChallenge {
    /// The ceremony to send back with the answer.
    pub ceremony_id: String,
    /// `navigator.credentials.get` options (`{"publicKey": {...}}`).
    pub options: Value,
    /// After this instant the answer is refused.
    pub expires_at: DateTime<Utc>,
}

impl ApprovalService {
    /// Makes a passkey challenge for approving row `id`, bound to the call hash of the call
    /// that will run (the request's, or with `items` the narrowed call's:
    /// docs/adr/0122-shaping-a-call.md), stored as a ceremony that lapses after
    /// [`CEREMONY_SECS`] and is used once.
    ///
    /// # Errors
    /// [`RespondError::Forbidden`] for read scope; `NotFound`; `AlreadyDecided`/`Expired` when
    /// the row can no longer be answered; `Items` for a choice of items that does not fit the
    /// card; `PasskeyRequired` when passkeys are off here or none is registered; `Store`.
    pub async fn passkey_challenge(
        &self,
        id: &str,
        shaping: super::respond::Shaping<'_>,
        actor: &Actor,
    ) -> Result<PasskeyChallenge, RespondError> {
        let now = self.clock.now();
        let row = self.answerable(id, actor, now).await?;
        let refuse = |refusal: PasskeyRefusal| {
            RespondError::PasskeyRequired(refusal.to_string(), Box::new(row.clone()))
        };
        let Some(settings) = &self.passkeys else {
            return Err(refuse(PasskeyRefusal::Off(
                "no passkey verifier is set up".into(),
            )));
        };
        if let Some(why) = settings.check.off_reason() {
            return Err(refuse(PasskeyRefusal::Off(why)));
        }
        // The row read above is pending and unlapsed: the edit is checked against it, with no
        // second read.
        let decided = match shaping.edits {
            Some(edits) => {
                self.edited_terms(&row, Decision::Approve, shaping.items, edits)
                    .await?
            }
            None => decided_terms(&row, Decision::Approve, shaping.items)?,
        };
        let runs = decided
            .as_ref()
            .map_or(row.call_hash.as_str(), |d| d.call.call_hash.as_str());
        let binding = Some((row.id.as_str(), runs));
        authentication(settings, binding, &actor.name, now)
            .await?
            .ok_or_else(|| refuse(PasskeyRefusal::NoneRegistered))
    }

    /// Makes a challenge for proving one of the owner's passkeys before the set of passkeys
    /// changes (a `manage` ceremony, used once, two minutes); `None` when none is registered.
    ///
    /// # Errors
    /// [`StoreError`] (also when passkeys are off here or the verifier fails).
    pub async fn passkey_proof_challenge(
        &self,
        actor: &Actor,
    ) -> Result<Option<PasskeyChallenge>, StoreError> {
        let settings = self
            .passkeys
            .as_ref()
            .ok_or_else(|| StoreError::Backend("no passkey verifier is set up".into()))?;
        authentication(settings, None, &actor.name, self.clock.now()).await
    }

    /// Checks the passkey answer for approving the row `read` (inside the decision's unit):
    /// an assertion made for a ceremony of this approval and `runs`, the call hash of the call
    /// that will run (the request's, or the narrowed call's), unused and unlapsed at `at`, that
    /// verifies with user verification. Returns what the commit writes (the ceremony used, the
    /// passkey's new counter) and what the audit entry keeps.
    pub(super) fn check_passkey(
        &self,
        read: &DecisionRead,
        assertion: Option<&Assertion>,
        runs: &str,
        at: DateTime<Utc>,
    ) -> Result<(PasskeyUse, Value), PasskeyRefusal> {
        let assertion = assertion.ok_or(PasskeyRefusal::Missing)?;
        let settings = self
            .passkeys
            .as_ref()
            .ok_or_else(|| PasskeyRefusal::Off("no passkey verifier is set up".into()))?;
        if let Some(why) = settings.check.off_reason() {
            return Err(PasskeyRefusal::Off(why));
        }
        let approval = &read.approval;
        let ceremony = read
            .ceremony
            .as_ref()
            .filter(|c| c.id == assertion.ceremony_id)
            .ok_or_else(|| PasskeyRefusal::WrongCeremony("no challenge this server made".into()))?;
        // A ceremony made to prove a passkey before a change is "another approval" here.
        let purpose = match ceremony.purpose {
            CeremonyPurpose::Approve => CeremonyPurpose::Approve,
            _ => return Err(PasskeyRefusal::WrongCeremony("another approval".into())),
        };
        ceremony.usable(purpose, Some((approval.id.as_str(), runs)), at)?;
        // Under the consent rule the answer must carry the challenge derived from this
        // approval, the call that runs and the ceremony's nonce; before it, the one recorded.
        let nonce = ceremony
            .nonce
            .as_deref()
            .map(|text| {
                Base64UrlUnpadded::decode_vec(text).map_err(|_| {
                    PasskeyRefusal::Invalid("the challenge's stored nonce is not base64url".into())
                })
            })
            .transpose()?;
        let challenge = nonce.as_deref().map(|nonce| {
            ConsentTerms {
                approval_id: &approval.id,
                call_hash: runs,
                decision: Decision::Approve,
                nonce,
            }
            .challenge()
        });
        let verified = settings.check.verify(
            &ceremony.state,
            challenge.as_ref().map(|c| c.as_slice()),
            &assertion.credential,
        )?;
        let response = &assertion.credential["response"];
        let record = json!({
            "ceremony_id": ceremony.id,
            "credential_id": verified.credential_id,
            "call_hash": runs,
            "rule": ceremony.nonce.as_ref().map(|_| CONSENT_RULE),
            "nonce": ceremony.nonce,
            "client_data_json": response["clientDataJSON"],
            "authenticator_data": response["authenticatorData"],
            "signature": response["signature"],
            "user_handle": response.get("userHandle").cloned().unwrap_or(Value::Null),
            "counter": verified.counter,
            "origin": settings.check.origin(),
        });
        Ok((
            PasskeyUse {
                ceremony_id: ceremony.id.clone(),
                credential_id: verified.credential_id,
                key: verified.key,
                counter: verified.counter,
                at,
            },
            record,
        ))
    }
}
