//! The passkey routes (ADR-0118 decision 4). Any paired device may list the owner's passkeys;
//! a control device registers the first one, and once one exists adding or removing one needs a
//! proof: an assertion from an existing passkey, for a challenge from `POST /api/passkeys/proofs`.
//! A card that needs the owner's passkey gets its own challenge from
//! `POST /governance/approvals/{id}/passkey`, answered with the approve
//! (`POST /governance/approvals/{id}/respond` with `passkey`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use iris_core::passkey::{
    Assertion, Ceremony, CeremonyPurpose, PasskeyCheck, PasskeyRecord, PasskeyRefusal, PasskeyUse,
    CEREMONY_SECS,
};
use iris_core::ports::{PasskeyChange, PasskeyStore};
use iris_core::wire::ErrorBody;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::{parse_json, Authed, Body, Controller};
use crate::error::ApiError;
use crate::state::AppState;

/// Longest passkey name, in characters (once trimmed).
pub(crate) const MAX_NAME_CHARS: usize = 60;

/// One passkey as the API shows it (its key stays on the server).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PasskeyView {
    /// Its id (to remove it by).
    pub id: String,
    /// The owner's name for it.
    pub name: String,
    /// The credential id, base64url.
    pub credential_id: String,
    /// The device that registered it.
    pub added_by: String,
    /// When it was registered.
    pub created_at: DateTime<Utc>,
    /// When it last approved a card or proved a change.
    pub last_used_at: Option<DateTime<Utc>>,
    /// Its public key's fingerprint (`SHA256:…`), what `iris audit verify --credential` pins
    /// (docs/adr/0124-signed-consent.md); `null` when the stored key cannot be read.
    pub fingerprint: Option<String>,
}

/// `GET /api/passkeys`'s answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PasskeyList {
    /// The owner's passkeys, oldest first.
    pub passkeys: Vec<PasskeyView>,
    /// Whether passkeys work on this server (a relying party).
    pub enabled: bool,
    /// Why not, when they do not (the sentence says which setting to change).
    pub off_reason: Option<String>,
    /// The relying party's id (`localhost`, `iris.example.org`) when on.
    pub relying_party: Option<String>,
    /// `IRIS_PASSKEY_REQUIRED`: `never`, `destructive` or `approvals`.
    pub required: String,
}

/// A challenge for the browser: the ceremony to send back and the options for
/// `navigator.credentials.create` (registration) or `.get` (a proof, an approve).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ChallengeBody {
    /// The ceremony it belongs to.
    pub ceremony_id: String,
    /// `{"publicKey": {...}}`, binary fields in base64url.
    #[schema(value_type = Object)]
    pub options: Value,
    /// After this instant the answer is refused (two minutes).
    pub expires_at: DateTime<Utc>,
}

/// `POST /api/passkeys/registrations` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistrationRequest {
    /// The owner's name for the new passkey (1–60 characters), e.g. "iPhone".
    pub name: String,
}

/// `POST /api/passkeys` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterRequest {
    /// The registration challenge's ceremony.
    pub ceremony_id: String,
    /// The browser's `navigator.credentials.create` result.
    #[schema(value_type = Object)]
    pub credential: Value,
    /// An existing passkey's answer to a proof challenge; needed once any passkey exists.
    #[serde(default)]
    pub proof: Option<Assertion>,
}

/// `DELETE /api/passkeys/{id}` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveRequest {
    /// An existing passkey's answer to a proof challenge.
    #[serde(default)]
    pub proof: Option<Assertion>,
}

/// A new passkey's name, trimmed: 1 to [`MAX_NAME_CHARS`] characters, none of them a control
/// or text-direction character (names are shown in terminals and on pages). The OpenAPI
/// document states the same rule as a pattern (`crate::openapi`).
///
/// # Errors
/// The sentence saying which rule the name breaks.
pub(crate) fn passkey_name(name: &str) -> Result<&str, String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(format!(
            "a passkey's name must be 1 to {MAX_NAME_CHARS} characters; nothing was changed"
        ));
    }
    if name.chars().any(|c| {
        c.is_control() || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    }) {
        return Err(
            "a passkey's name must not hold control or text-direction characters; nothing was changed"
                .into(),
        );
    }
    Ok(name)
}

/// A passkey answer's `credential` is the browser's `PublicKeyCredential` JSON, an object: any
/// other JSON is refused (400) as soon as the body is read, whether or not the answer is needed
/// (an approve of a card that needs no passkey, a change while no passkey exists).
pub(crate) fn credential_is_object(
    answer: Option<&Assertion>,
    field: &str,
) -> Result<(), ApiError> {
    match answer {
        Some(answer) if !answer.credential.is_object() => Err(ApiError::BadRequest(format!(
            "`{field}.credential` must be the browser's credential, a JSON object; nothing was changed"
        ))),
        _ => Ok(()),
    }
}

fn view(p: PasskeyRecord) -> PasskeyView {
    let fingerprint = super::key::CredentialKey::from_stored(&p.key)
        .ok()
        .map(|(key, _)| key.fingerprint());
    PasskeyView {
        fingerprint,
        id: p.id,
        name: p.name,
        credential_id: p.credential_id,
        added_by: p.added_by,
        created_at: p.created_at,
        last_used_at: p.last_used_at,
    }
}

/// 404 with the sentence when passkeys are off here.
fn on(state: &AppState) -> Result<&super::Passkeys, ApiError> {
    match state.passkeys.off_reason() {
        Some(why) => Err(ApiError::Off(why)),
        None => Ok(&state.passkeys),
    }
}

/// A proof (an existing passkey's answer to a `manage` challenge) checked, for the commit that
/// uses it: 403 `passkey_required` when missing or not accepted.
async fn check_proof(
    state: &AppState,
    proof: Option<&Assertion>,
) -> Result<Option<PasskeyUse>, ApiError> {
    let live = state.store.passkeys(false).await?;
    if live.is_empty() {
        return Ok(None);
    }
    let refuse = |why: String| {
        ApiError::PasskeyRequired(
            format!("changing your passkeys needs one of them: {why}; nothing was changed"),
            None,
        )
    };
    let proof = proof.ok_or_else(|| refuse("no proof came with the request".into()))?;
    let ceremony = state
        .store
        .ceremony(&proof.ceremony_id)
        .await?
        .ok_or_else(|| refuse("the proof answers no challenge of this server".into()))?;
    let now = Utc::now();
    ceremony
        .usable(CeremonyPurpose::Manage, None, now)
        .map_err(|e| refuse(e.to_string()))?;
    let verified = state
        .passkeys
        .verify(&ceremony.state, None, &proof.credential)
        .map_err(|e: PasskeyRefusal| refuse(e.to_string()))?;
    Ok(Some(PasskeyUse {
        ceremony_id: ceremony.id,
        credential_id: verified.credential_id,
        key: verified.key,
        counter: verified.counter,
        at: now,
    }))
}

async fn store_ceremony(
    state: &AppState,
    purpose: CeremonyPurpose,
    device: &str,
    state_text: String,
) -> Result<(String, DateTime<Utc>), ApiError> {
    let now = Utc::now();
    let ceremony = Ceremony {
        id: uuid::Uuid::new_v4().to_string(),
        purpose,
        approval_id: None,
        call_hash: None,
        state: state_text,
        nonce: None,
        device: device.to_string(),
        created_at: now,
        expires_at: now + chrono::Duration::seconds(CEREMONY_SECS),
        used_at: None,
    };
    state.store.start_ceremony(&ceremony).await?;
    Ok((ceremony.id, ceremony.expires_at))
}

/// `GET /api/passkeys` (any device): the owner's passkeys and whether passkeys work here.
#[utoipa::path(
    get,
    path = "/api/passkeys",
    operation_id = "list_passkeys",
    tag = "passkeys",
    responses(
        (status = 200, description = "The owner's passkeys (oldest first) and the setting.", body = PasskeyList),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn list(
    State(state): State<AppState>,
    _device: Authed,
) -> Result<Json<PasskeyList>, ApiError> {
    let passkeys = state
        .store
        .passkeys(false)
        .await?
        .into_iter()
        .map(view)
        .collect();
    let off_reason = state.passkeys.off_reason();
    Ok(Json(PasskeyList {
        passkeys,
        enabled: off_reason.is_none(),
        off_reason,
        relying_party: state.passkeys.rp_id.clone(),
        required: state.passkeys.policy.as_str().to_string(),
    }))
}

/// `POST /api/passkeys/registrations` (control): a challenge to register a new passkey.
#[utoipa::path(
    post,
    path = "/api/passkeys/registrations",
    operation_id = "passkey_registration",
    tag = "passkeys",
    request_body = RegistrationRequest,
    responses(
        (status = 200, description = "The options for `navigator.credentials.create`, answered within two minutes.", body = ChallengeBody),
        (status = 400, description = "No name, or longer than 60 characters; nothing changed.", body = ErrorBody),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 403, description = "A read device, or a cross-site cookie request.", body = ErrorBody),
        (status = 404, description = "Passkeys are off here: the sentence says why.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn registration(
    State(state): State<AppState>,
    Controller(actor): Controller,
    Body(body): Body,
) -> Result<Json<ChallengeBody>, ApiError> {
    let request: RegistrationRequest = parse_json(&body, "the body must be {\"name\": \"…\"}")?;
    let name = passkey_name(&request.name).map_err(ApiError::BadRequest)?;
    let passkeys = on(&state)?;
    // Only live ones: a removed passkey's authenticator may register a new one.
    let existing: Vec<String> = state
        .store
        .passkeys(false)
        .await?
        .into_iter()
        .map(|p| p.key)
        .collect();
    let registration = passkeys
        .start_registration(name, &existing)
        .map_err(ApiError::Internal)?;
    // The name rides in the ceremony's state so the registration stores what was asked.
    let state_text = serde_json::json!({"name": name, "webauthn": registration.state}).to_string();
    let (ceremony_id, expires_at) =
        store_ceremony(&state, CeremonyPurpose::Register, &actor.name, state_text).await?;
    Ok(Json(ChallengeBody {
        ceremony_id,
        options: registration.options,
        expires_at,
    }))
}

/// `POST /api/passkeys/proofs` (control): a challenge for an existing passkey, to prove it
/// before adding or removing one.
#[utoipa::path(
    post,
    path = "/api/passkeys/proofs",
    operation_id = "passkey_proof",
    tag = "passkeys",
    responses(
        (status = 200, description = "The options for `navigator.credentials.get`, answered within two minutes.", body = ChallengeBody),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 403, description = "A read device, or a cross-site cookie request.", body = ErrorBody),
        (status = 404, description = "Passkeys are off here, or none is registered.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn proof(
    State(state): State<AppState>,
    Controller(actor): Controller,
) -> Result<Json<ChallengeBody>, ApiError> {
    on(&state)?;
    let challenge = state
        .service
        .passkey_proof_challenge(&actor)
        .await?
        .ok_or_else(|| {
            ApiError::NotFound(
                "no passkey is registered, so there is none to prove; register the first one"
                    .into(),
            )
        })?;
    Ok(Json(ChallengeBody {
        ceremony_id: challenge.ceremony_id,
        options: challenge.options,
        expires_at: challenge.expires_at,
    }))
}

/// `POST /api/passkeys` (control): registers the passkey the browser made; once any passkey
/// exists, only with a `proof` from one of them.
#[utoipa::path(
    post,
    path = "/api/passkeys",
    operation_id = "register_passkey",
    tag = "passkeys",
    request_body = RegisterRequest,
    responses(
        (status = 201, description = "Registered.", body = PasskeyView),
        (status = 400, description = "The credential does not verify, or its challenge was used or lapsed; nothing changed.", body = ErrorBody),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 403, description = "A read device, a cross-site cookie request, or (`code` = `passkey_required`) a passkey exists and no acceptable proof came; nothing changed.", body = ErrorBody),
        (status = 404, description = "Passkeys are off here.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn register(
    State(state): State<AppState>,
    Controller(actor): Controller,
    Body(body): Body,
) -> Result<(StatusCode, Json<PasskeyView>), ApiError> {
    let request: RegisterRequest = parse_json(
        &body,
        "the body must be {\"ceremony_id\", \"credential\", \"proof\"?}",
    )?;
    credential_is_object(request.proof.as_ref(), "proof")?;
    let passkeys = on(&state)?;
    let bad = |why: String| ApiError::BadRequest(format!("{why}; nothing was changed"));
    let ceremony = state
        .store
        .ceremony(&request.ceremony_id)
        .await?
        .filter(|c| c.purpose == CeremonyPurpose::Register)
        .ok_or_else(|| {
            bad("`ceremony_id` names no registration challenge of this server".into())
        })?;
    let stored: Value = serde_json::from_str(&ceremony.state)
        .map_err(|e| ApiError::Internal(format!("a registration ceremony does not parse: {e}")))?;
    let name = stored["name"].as_str().unwrap_or("Passkey").to_string();
    let webauthn_state = stored["webauthn"].as_str().unwrap_or_default();
    let registered = passkeys
        .finish_registration(webauthn_state, &request.credential)
        .map_err(bad)?;
    let proof = check_proof(&state, request.proof.as_ref()).await?;
    let now = Utc::now();
    let record = PasskeyRecord {
        id: uuid::Uuid::new_v4().to_string(),
        credential_id: registered.credential_id,
        name,
        key: registered.key,
        added_by: actor.name.clone(),
        created_at: now,
        last_used_at: None,
        removed_at: None,
    };
    match state
        .store
        .add_passkey(&ceremony.id, proof.as_ref(), &record, now)
        .await?
    {
        PasskeyChange::Done => {
            tracing::info!(device = %actor.name, passkey = %record.id, "a passkey was registered");
            Ok((StatusCode::CREATED, Json(view(record))))
        }
        PasskeyChange::Refused(why) if proof.is_none() => Err(ApiError::PasskeyRequired(
            format!("{why}; nothing was changed"),
            None,
        )),
        PasskeyChange::Refused(why) => Err(bad(why)),
    }
}

/// `DELETE /api/passkeys/{id}` (control): removes a passkey, with a `proof` from one of them
/// (it may be the one removed). Its row is kept, so the decisions it made can still be verified.
#[utoipa::path(
    delete,
    path = "/api/passkeys/{id}",
    operation_id = "remove_passkey",
    tag = "passkeys",
    params(("id" = String, Path, description = "The passkey's id.")),
    request_body = RemoveRequest,
    responses(
        (status = 204, description = "Removed."),
        (status = 400, description = "The body does not parse; nothing changed.", body = ErrorBody),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 403, description = "A read device, a cross-site cookie request, or (`code` = `passkey_required`) no acceptable proof; nothing changed.", body = ErrorBody),
        (status = 404, description = "No passkey has this id (or it was removed already).", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn remove(
    State(state): State<AppState>,
    Controller(actor): Controller,
    Path(id): Path<String>,
    Body(body): Body,
) -> Result<StatusCode, ApiError> {
    let request: RemoveRequest = if body.is_empty() {
        RemoveRequest { proof: None }
    } else {
        parse_json(
            &body,
            "the body must be {\"proof\": {\"ceremony_id\", \"credential\"}}",
        )?
    };
    credential_is_object(request.proof.as_ref(), "proof")?;
    let live = state.store.passkeys(false).await?;
    if !live.iter().any(|p| p.id == id) {
        return Err(ApiError::NotFound(format!(
            "passkey `{id}` does not exist or was removed already; nothing was removed"
        )));
    }
    let proof = check_proof(&state, request.proof.as_ref()).await?;
    match state
        .store
        .remove_passkey(&id, proof.as_ref(), &actor.name, Utc::now())
        .await?
    {
        PasskeyChange::Done => {
            tracing::info!(device = %actor.name, passkey = %id, "a passkey was removed");
            Ok(StatusCode::NO_CONTENT)
        }
        PasskeyChange::Refused(why) => Err(ApiError::PasskeyRequired(why, None)),
    }
}

/// The optional body of `POST /governance/approvals/{id}/passkey`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalChallengeRequest {
    /// The items the approve will keep (indices into `approval.items`, as in the respond
    /// body): the challenge is then bound to the narrowed call's hash. Absent: the whole call.
    #[serde(default)]
    #[schema(min_items = 1)]
    pub items: Option<Vec<u32>>,
    /// The edits the approve will make (as in the respond body): the challenge is then bound
    /// to the edited call's hash.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub edits: Option<serde_json::Map<String, Value>>,
}

/// `POST /governance/approvals/{id}/passkey` (control): a challenge for approving this card,
/// bound to its id and the call hash of the call that will run (with `items`, the narrowed
/// call's), used once, lapsing after two minutes. The body is optional.
#[utoipa::path(
    post,
    path = "/governance/approvals/{id}/passkey",
    tag = "governance",
    params(("id" = String, Path, description = "The approval id.")),
    request_body(content = Option<ApprovalChallengeRequest>, description = "Optional: `items`, the same choice of items the approve will send."),
    responses(
        (status = 200, description = "The options for `navigator.credentials.get`; send the answer as `passkey` with the approve (and the same `items`).", body = ChallengeBody),
        (status = 400, description = "The body does not parse, or `items` does not fit the card; nothing changed.", body = ErrorBody),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 403, description = "A read device, a cross-site cookie request, or (`code` = `passkey_required`) passkeys are off or none is registered.", body = ErrorBody),
        (status = 404, description = "No approval has this id.", body = ErrorBody),
        (status = 409, description = "Already decided.", body = ErrorBody),
        (status = 410, description = "Expired.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn approval_challenge(
    State(state): State<AppState>,
    Controller(actor): Controller,
    Path(id): Path<String>,
    Body(body): Body,
) -> Result<Json<ChallengeBody>, ApiError> {
    let request: ApprovalChallengeRequest = if body.iter().all(u8::is_ascii_whitespace) {
        ApprovalChallengeRequest::default()
    } else {
        crate::api::parse_shaped(
            &body,
            "the body is optional; when given it must be {\"items\"?: [whole numbers: indices into the card's items], \"edits\"?: {field: value}}",
        )?
    };
    let challenge = state
        .service
        .passkey_challenge(
            &id,
            iris_core::approvals::Shaping {
                items: request.items.as_deref(),
                edits: request.edits.as_ref(),
            },
            &actor,
        )
        .await?;
    Ok(Json(ChallengeBody {
        ceremony_id: challenge.ceremony_id,
        options: challenge.options,
        expires_at: challenge.expires_at,
    }))
}
