//! Passkeys bound to the call (ADR-0118 decision 4, DESIGN §9 "the owner's phone"): which cards
//! need the owner's passkey to be approved, the ceremonies a passkey answers, and the check a
//! decision runs inside its own unit of work.
//!
//! The rules, each owned here:
//! - [`PasskeyPolicy`] (`IRIS_PASSKEY_REQUIRED`): `never`, `destructive`, or `approvals`
//!   (destructive calls and pinned writes). A card's need is pinned into its row when it is
//!   written ([`PasskeyPolicy::requires`]) like its other request terms, so every server and
//!   surface reads the same answer from the row.
//! - A [`Ceremony`] is one challenge the server made: for registering a passkey, for proving an
//!   existing one before the set of passkeys changes, or for approving one approval (then it
//!   carries that approval's id and call hash). It lapses after [`CEREMONY_SECS`] and is used
//!   once: the commit that uses it sets `used_at` by compare-and-set.
//! - An approval that needs a passkey is approved only with an assertion made for a ceremony of
//!   that approval and that call hash, verified with user verification inside the decision's
//!   transaction ([`crate::approvals::respond`]); the cryptography sits behind [`PasskeyCheck`]
//!   (the server implements it with `webauthn-rs`), so the core stays free of it.

pub mod consent;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::wire::ApprovalKind;

/// How long a ceremony's challenge may be answered, in seconds (two minutes).
pub const CEREMONY_SECS: i64 = 120;

/// Which approvals need the owner's passkey (`IRIS_PASSKEY_REQUIRED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PasskeyPolicy {
    /// No card needs one (the default).
    #[default]
    Never,
    /// Destructive calls need one.
    Destructive,
    /// Destructive calls and pinned writes need one.
    Approvals,
}

impl PasskeyPolicy {
    /// Parses the setting's spelling: `never`, `destructive` or `approvals`.
    ///
    /// # Errors
    /// A sentence naming the setting and the three spellings.
    pub fn parse(text: &str) -> Result<PasskeyPolicy, String> {
        match text.trim() {
            "never" => Ok(PasskeyPolicy::Never),
            "destructive" => Ok(PasskeyPolicy::Destructive),
            "approvals" => Ok(PasskeyPolicy::Approvals),
            other => Err(format!(
                "IRIS_PASSKEY_REQUIRED is `{other}`; it must be `never`, `destructive` or `approvals`"
            )),
        }
    }

    /// The setting's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PasskeyPolicy::Never => "never",
            PasskeyPolicy::Destructive => "destructive",
            PasskeyPolicy::Approvals => "approvals",
        }
    }

    /// Whether a card of `kind` needs the owner's passkey to be approved. Evaluator halts pin
    /// no call of their own (the call already ran) and never need one.
    pub fn requires(self, kind: ApprovalKind) -> bool {
        match (self, kind) {
            (PasskeyPolicy::Never, _) | (_, ApprovalKind::Evaluator) => false,
            (PasskeyPolicy::Destructive, kind) => kind == ApprovalKind::Destructive,
            (PasskeyPolicy::Approvals, _) => true,
        }
    }
}

/// What a ceremony's challenge is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CeremonyPurpose {
    /// Registering a new passkey (the browser's `navigator.credentials.create`).
    Register,
    /// Proving an existing passkey before adding or removing one.
    Manage,
    /// Approving one approval (bound to its id and call hash).
    Approve,
}

impl CeremonyPurpose {
    /// The stored spelling: `register`, `manage` or `approve`.
    pub fn as_str(self) -> &'static str {
        match self {
            CeremonyPurpose::Register => "register",
            CeremonyPurpose::Manage => "manage",
            CeremonyPurpose::Approve => "approve",
        }
    }

    /// Parses the stored spelling; `None` for anything else.
    pub fn parse(text: &str) -> Option<CeremonyPurpose> {
        match text {
            "register" => Some(CeremonyPurpose::Register),
            "manage" => Some(CeremonyPurpose::Manage),
            "approve" => Some(CeremonyPurpose::Approve),
            _ => None,
        }
    }
}

/// One challenge the server made, as stored (`passkey_ceremonies`).
#[derive(Debug, Clone, PartialEq)]
pub struct Ceremony {
    /// Its id (UUID text), sent back with the browser's answer.
    pub id: String,
    /// What it is for.
    pub purpose: CeremonyPurpose,
    /// For [`CeremonyPurpose::Approve`]: the approval.
    pub approval_id: Option<String>,
    /// For [`CeremonyPurpose::Approve`]: the approval's call hash when the challenge was made.
    pub call_hash: Option<String>,
    /// The verifier's own state for this challenge (opaque JSON text: for registrations,
    /// `webauthn-rs`'s serialised state; for the others, the challenge and the credentials it
    /// allows).
    pub state: String,
    /// For an approve made under [`consent::CONSENT_RULE`]: the nonce its challenge was derived
    /// with (base64url, unpadded); `None` for other purposes and for approves made before.
    pub nonce: Option<String>,
    /// The device that asked for it.
    pub device: String,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// After this instant it can no longer be answered ([`CEREMONY_SECS`] after it was made).
    pub expires_at: DateTime<Utc>,
    /// When an answer used it (once); `None` while unused.
    pub used_at: Option<DateTime<Utc>>,
}

pub use crate::wire::Assertion;

impl Ceremony {
    /// Whether an answer to this ceremony may be used at `at` for `purpose`, and for an approve
    /// for approval `binding.0` with call hash `binding.1` (the one rule every use checks: the
    /// approve's decision and the proofs before the set of passkeys changes). The commit that
    /// uses it checks the same again by compare-and-set.
    ///
    /// # Errors
    /// [`PasskeyRefusal::WrongCeremony`] naming what it was made for, or that it was used or
    /// lapsed.
    pub fn usable(
        &self,
        purpose: CeremonyPurpose,
        binding: Option<(&str, &str)>,
        at: DateTime<Utc>,
    ) -> Result<(), PasskeyRefusal> {
        if self.purpose != purpose {
            return Err(PasskeyRefusal::WrongCeremony(format!(
                "another purpose ({}, not {})",
                self.purpose.as_str(),
                purpose.as_str()
            )));
        }
        if let Some((approval_id, call_hash)) = binding {
            if self.approval_id.as_deref() != Some(approval_id) {
                return Err(PasskeyRefusal::WrongCeremony("another approval".into()));
            }
            if self.call_hash.as_deref() != Some(call_hash) {
                return Err(PasskeyRefusal::WrongCeremony("another call".into()));
            }
        }
        if self.used_at.is_some() {
            return Err(PasskeyRefusal::WrongCeremony(
                "a challenge that was already used (an answer is used once)".into(),
            ));
        }
        if self.expires_at <= at {
            return Err(PasskeyRefusal::WrongCeremony(format!(
                "a challenge that lapsed at {} (challenges last two minutes)",
                crate::wire::when_utc(self.expires_at)
            )));
        }
        Ok(())
    }
}

/// A passkey the owner registered (`passkeys`; rows are kept after removal so old decisions
/// can still be verified).
#[derive(Debug, Clone, PartialEq)]
pub struct PasskeyRecord {
    /// Row id (UUID text).
    pub id: String,
    /// The credential id, base64url without padding.
    pub credential_id: String,
    /// The owner's name for it ("iPhone", "YubiKey").
    pub name: String,
    /// The verifier's stored credential (opaque JSON text: public key, algorithm, counter).
    pub key: String,
    /// The device that registered it.
    pub added_by: String,
    /// When it was registered.
    pub created_at: DateTime<Utc>,
    /// When an assertion of it was last accepted.
    pub last_used_at: Option<DateTime<Utc>>,
    /// When it was removed; `None` while it counts.
    pub removed_at: Option<DateTime<Utc>>,
}

/// A verified assertion: which credential answered, its new signature counter, and what the
/// decision's audit entry keeps so the check can be run again later (`iris audit verify`).
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedAssertion {
    /// The credential id, base64url without padding.
    pub credential_id: String,
    /// The authenticator's signature counter in this assertion.
    pub counter: u32,
    /// The stored credential with the new counter (opaque JSON text, as [`PasskeyRecord::key`]).
    pub key: String,
}

/// Why a passkey was not accepted (the 403 `passkey_required` sentence names the passkey and
/// the rule).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PasskeyRefusal {
    /// No assertion was sent for a card that needs one.
    #[error("this card needs your passkey: approve it on the card in the web app")]
    Missing,
    /// Passkeys are off on this server (no verifier): why.
    #[error("this card needs your passkey, and passkeys are off on this server: {0}")]
    Off(String),
    /// No passkey is registered yet.
    #[error("this card needs your passkey, and none is registered yet: add one on the Devices page, then approve")]
    NoneRegistered,
    /// The ceremony is unknown, for another approval or call, used, or lapsed.
    #[error("the passkey answer was made for {0}; ask for a new challenge on the card")]
    WrongCeremony(String),
    /// The signature, origin, challenge or credential did not verify.
    #[error("the passkey answer did not verify: {0}")]
    Invalid(String),
    /// The authenticator did not verify the user (Face ID, fingerprint, PIN).
    #[error("the passkey did not verify you (no Face ID, fingerprint or PIN); approving needs user verification")]
    NotVerified,
}

/// The cryptographic half of a ceremony (the server implements it with `webauthn-rs`; the
/// core only calls it). Pure: it reads nothing and writes nothing.
pub trait PasskeyCheck: Send + Sync {
    /// Verifies `credential` (a `PublicKeyCredential` JSON) against an authentication
    /// ceremony's `state` ([`Ceremony::state`]): WebAuthn §7.2's checks of the challenge, origin,
    /// relying party, signature, user verification and counter, for one of the credentials the
    /// state allows. `challenge` is the one the answer must carry when the caller derives it
    /// (an approve's consent challenge, [`consent`]); `None` takes the one the state recorded
    /// (proofs, and approvals made before consent challenges).
    ///
    /// # Errors
    /// [`PasskeyRefusal::NotVerified`] without user verification, [`PasskeyRefusal::Invalid`]
    /// for anything else that does not verify.
    fn verify(
        &self,
        state: &str,
        challenge: Option<&[u8]>,
        credential: &Value,
    ) -> Result<VerifiedAssertion, PasskeyRefusal>;

    /// An authentication challenge for `passkeys` (their stored keys, [`PasskeyRecord::key`])
    /// carrying `challenge` (32 bytes: an approve's consent challenge, or random for a proof):
    /// the options the browser's `navigator.credentials.get` takes (`{"publicKey": {...}}`)
    /// and the verifier's state to store with the ceremony.
    ///
    /// # Errors
    /// A sentence: passkeys are off, or a stored key does not parse.
    fn challenge(&self, passkeys: &[String], challenge: &[u8]) -> Result<(Value, String), String>;

    /// Why passkeys are off here, or `None` when they are on.
    fn off_reason(&self) -> Option<String>;

    /// The site's origin the answers are checked against (`http://localhost:3000`), kept with
    /// each decision so it can be checked again after the address changes; `None` when off.
    fn origin(&self) -> Option<String>;
}

/// The passkey a decision used, written in the decision's commit: its ceremony is marked used
/// (compare-and-set: unused, unlapsed, for this approval and call hash) and the passkey's
/// counter and last use updated (compare-and-set: not removed, and the stored counter below
/// the new one unless both are zero, so two overlapping ceremonies never lower it: the later
/// commit of a lower counter is refused, WebAuthn §7.2 step 22).
#[derive(Debug, Clone, PartialEq)]
pub struct PasskeyUse {
    /// The ceremony answered.
    pub ceremony_id: String,
    /// The passkey's credential id.
    pub credential_id: String,
    /// Its stored credential with the new counter.
    pub key: String,
    /// The assertion's signature counter (0 for authenticators that keep none).
    pub counter: u32,
    /// When.
    pub at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_spellings_round_trip_and_bad_ones_name_the_setting() {
        for p in [
            PasskeyPolicy::Never,
            PasskeyPolicy::Destructive,
            PasskeyPolicy::Approvals,
        ] {
            assert_eq!(PasskeyPolicy::parse(p.as_str()), Ok(p));
        }
        let err = PasskeyPolicy::parse("always").unwrap_err();
        assert!(err.contains("IRIS_PASSKEY_REQUIRED") && err.contains("`always`"));
    }

    #[test]
    fn policy_decides_by_kind() {
        use ApprovalKind::*;
        let table = [
            (PasskeyPolicy::Never, [false, false, false]),
            (PasskeyPolicy::Destructive, [true, false, false]),
            (PasskeyPolicy::Approvals, [true, true, false]),
        ];
        for (policy, want) in table {
            let got = [Destructive, PinnedWrite, Evaluator].map(|k| policy.requires(k));
            assert_eq!(got, want, "{policy:?}");
        }
    }

    fn ceremony(purpose: CeremonyPurpose, at: DateTime<Utc>) -> Ceremony {
        Ceremony {
            id: "c1".into(),
            purpose,
            approval_id: (purpose == CeremonyPurpose::Approve).then(|| "a1".into()),
            call_hash: (purpose == CeremonyPurpose::Approve).then(|| "h1".into()),
            state: "{}".into(),
            nonce: None,
            device: "laptop".into(),
            created_at: at,
            expires_at: at + chrono::Duration::seconds(CEREMONY_SECS),
            used_at: None,
        }
    }

    #[test]
    fn a_ceremony_is_used_once_for_its_purpose_approval_and_call_within_two_minutes() {
        let t0 = DateTime::parse_from_rfc3339("2026-12-02T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let approve = ceremony(CeremonyPurpose::Approve, t0);
        let this = Some(("a1", "h1"));
        assert_eq!(approve.usable(CeremonyPurpose::Approve, this, t0), Ok(()));
        let just_before = t0 + chrono::Duration::seconds(CEREMONY_SECS - 1);
        assert_eq!(
            approve.usable(CeremonyPurpose::Approve, this, just_before),
            Ok(())
        );
        let refusal = |c: &Ceremony, purpose, binding, at| match c.usable(purpose, binding, at) {
            Err(PasskeyRefusal::WrongCeremony(why)) => why,
            other => panic!("not refused: {other:?}"),
        };
        let lapse = t0 + chrono::Duration::seconds(CEREMONY_SECS);
        assert!(refusal(&approve, CeremonyPurpose::Approve, this, lapse).contains("lapsed"));
        assert!(
            refusal(&approve, CeremonyPurpose::Approve, Some(("a2", "h1")), t0)
                .contains("another approval")
        );
        assert!(
            refusal(&approve, CeremonyPurpose::Approve, Some(("a1", "h2")), t0)
                .contains("another call")
        );
        assert!(refusal(&approve, CeremonyPurpose::Manage, None, t0).contains("another purpose"));
        let used = Ceremony {
            used_at: Some(t0),
            ..approve
        };
        assert!(refusal(&used, CeremonyPurpose::Approve, this, t0).contains("already used"));
        let manage = ceremony(CeremonyPurpose::Manage, t0);
        assert_eq!(manage.usable(CeremonyPurpose::Manage, None, t0), Ok(()));
        assert!(refusal(&manage, CeremonyPurpose::Approve, this, t0).contains("another purpose"));
    }

    #[test]
    fn purposes_round_trip() {
        for p in [
            CeremonyPurpose::Register,
            CeremonyPurpose::Manage,
            CeremonyPurpose::Approve,
        ] {
            assert_eq!(CeremonyPurpose::parse(p.as_str()), Some(p));
        }
        assert_eq!(CeremonyPurpose::parse("login"), None);
    }
}
