//! The seam between the app and the server: who is asking ([`Viewer`], also sent to the
//! browser) and, on the server only, [`AppBackend`], the trait the `iris` server implements
//! and provides to the app through `leptos_axum` context as `Arc<dyn AppBackend>`.

use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use iris_core::wire::{
    Approval, ApprovalList, AuditEntry, ChatResponse, Conversation, Decision, DeviceInfo,
    DeviceScope, PairingOffer, PluginList,
};

/// The signed-in device or browser session looking at the app.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Viewer {
    /// Device or session name, as the cards show who answered.
    pub name: String,
    /// `control` scope: may answer cards and chat. A `read` device may only look.
    pub can_answer: bool,
}

/// What the app needs from the server. Server functions reach it with
/// `use_context::<std::sync::Arc<dyn AppBackend>>()`.
#[cfg(feature = "ssr")]
#[async_trait::async_trait]
pub trait AppBackend: Send + Sync + 'static {
    /// Who is asking, from the request (its browser session, or `Authorization: Bearer`).
    /// None = not signed in (or the device was revoked).
    async fn viewer(&self, request: &axum::http::request::Parts) -> Option<Viewer>;
    /// Every pending approval, oldest first (they are few: each lapses within its TTL).
    async fn pending(&self) -> Result<Vec<Approval>, String>;
    /// One page of answered (or lapsed) approvals matching `filter`, newest first, starting
    /// below the cursor `before` (a `next` of an earlier page read with the same filters);
    /// `next` is the following page's cursor. `Err` for a cursor this server did not hand
    /// out.
    async fn answered(
        &self,
        before: Option<String>,
        filter: &crate::activity::filters::HistoryFilter,
    ) -> Result<ApprovalList, String>;
    /// The tools whose calls make cards (approved per call), by name, sorted: what the
    /// history's tool filter offers.
    fn card_tools(&self) -> Vec<String>;
    /// One approval by id; `Ok(None)` when there is no such row.
    async fn approval(&self, id: &str) -> Result<Option<Approval>, String>;
    /// Answers a card through `respond_to_approval`; `items` approves only those of its items
    /// (indices into `items`; `None` for the whole card), `edits` the call with those fields
    /// changed. The `Err` text is shown to the owner
    /// (e.g. "already approved by phone via cli at ...", "expired").
    async fn respond(
        &self,
        viewer: &Viewer,
        id: &str,
        decision: Decision,
        reason: Option<String>,
        items: Option<Vec<u32>>,
        edits: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<Approval, String>;
    /// Runs the card's undo through the approvals service (DESIGN §9 "Undo from the card");
    /// returns the row with its `undo`. The `Err` text is shown on the card (already undone by
    /// whom, window closed, nothing to undo).
    async fn undo(&self, viewer: &Viewer, id: &str) -> Result<Approval, String>;
    /// An edit of a waiting card as it would run, checked, changing nothing.
    async fn review_edit(
        &self,
        viewer: &Viewer,
        id: &str,
        edits: serde_json::Map<String, serde_json::Value>,
    ) -> Result<iris_core::wire::EditReview, String>;
    /// A rejected card's reason, given after the tap, once
    /// (`POST /governance/approvals/{id}/reason`).
    async fn give_reason(
        &self,
        viewer: &Viewer,
        id: &str,
        reason: String,
    ) -> Result<Approval, String>;
    /// One chat turn (DESIGN §7 `POST /api/chat`).
    async fn chat(
        &self,
        viewer: &Viewer,
        message: String,
        conversation_id: Option<String>,
    ) -> Result<ChatResponse, String>;
    /// What was said in a conversation, oldest first (including resumed runs' replies).
    async fn conversation(&self, id: &str) -> Result<Conversation, String>;
    /// The audit entries of one approval, oldest first.
    async fn audit(&self, approval_id: &str) -> Result<Vec<AuditEntry>, String>;
    /// The newest writes that ran without a card (at most 20), newest first.
    async fn actions(&self) -> Result<Vec<AuditEntry>, String>;
    /// Why Web Push is off on this server (the sentence `GET /api/push/key` answers 404 with),
    /// or `None` when it is on: the page then never asks for the key only to be told no.
    fn push_off(&self) -> Option<String>;
    /// Every loaded plugin with its tools' effect, gate and undo (the Plugins page).
    async fn plugins(&self) -> Result<PluginList, String>;
    /// Live devices by name, `this_device` marking `viewer`'s (the Devices page).
    async fn devices(&self, viewer: &Viewer) -> Result<Vec<DeviceInfo>, String>;
    /// Revokes the live device `name` for `viewer` (a control device). `Err` says why not
    /// (e.g. no live device has that name).
    async fn revoke_device(&self, viewer: &Viewer, name: &str) -> Result<(), String>;
    /// A one-time pairing link for `scope`, made by `viewer`, on the address `request` used
    /// (or `IRIS_PUBLIC_URL`).
    async fn pairing_link(
        &self,
        viewer: &Viewer,
        scope: DeviceScope,
        request: &axum::http::request::Parts,
    ) -> Result<PairingOffer, String>;
}
