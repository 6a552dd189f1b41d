//! The owner's answer to a card, as a client sends it ([`RespondRequest`]) with the passkey
//! answer a card may need ([`Assertion`]). Part of the wire types (see the parent module).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Decision;

impl Decision {
    /// The contract's spelling: `approve` or `reject`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::Reject => "reject",
        }
    }
}

/// `POST /governance/approvals/{id}/reason` body: why the owner rejected a card, given after
/// the tap, once (docs/adr/0125-reason-after-reject.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReasonRequest {
    /// At most 500 characters, trimmed; shown on the card and told to the model.
    pub reason: String,
}

/// `POST /governance/approvals/{id}/respond` body. Any other field (`tool`, `args`) is ignored:
/// an answer covers the pinned call, or with `items` some of its items, or with `edits` the
/// call as the owner edited it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RespondRequest {
    /// approve or reject.
    pub decision: Decision,
    /// Optional words from the owner, stored on the row.
    #[serde(default)]
    pub reason: Option<String>,
    /// With "approve": the items the owner approves, as indices into `approval.items` (whole
    /// numbers; at least one, each once, in range; taken sorted). All of them is a plain full
    /// approval; some of them run the call narrowed to those items
    /// (docs/adr/0122-shaping-a-call.md). Only on a card with `card.items_arg`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(min_items = 1))]
    pub items: Option<Vec<u32>>,
    /// With "approve": new values for fields the card lets the owner edit (`card.editable`),
    /// checked as the model's call is; the edited call runs instead of the pinned one
    /// (docs/adr/0122-shaping-a-call.md). Not with `items`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub edits: Option<serde_json::Map<String, Value>>,
    /// The owner's passkey answer, for approving a card with `passkey_required` (ADR-0118
    /// decision 4): the challenge's `ceremony_id` from
    /// `POST /governance/approvals/{id}/passkey` and the browser's credential.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passkey: Option<Assertion>,
}

/// The browser's answer to a passkey challenge: the ceremony it answers and the
/// `PublicKeyCredential` JSON (`{"id", "rawId", "type", "response": {...}}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Assertion {
    /// The ceremony (challenge) it answers.
    pub ceremony_id: String,
    /// The browser's credential JSON.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub credential: Value,
}
