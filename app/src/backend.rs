//! The seam between the app and the server: who is asking ([`Viewer`], also sent to the
//! browser) and, on the server only, [`AppBackend`], the trait the `iris` server implements
//! and provides to the app through `leptos_axum` context as `Arc<dyn AppBackend>`.

use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use iris_core::wire::{Approval, AuditEntry, ChatResponse, Conversation, Decision, PluginList};

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
    /// Who is asking, from the request headers (cookie `iris_token`, or `Authorization: Bearer`). None = not signed in.
    async fn viewer(&self, headers: &axum::http::HeaderMap) -> Option<Viewer>;
    /// Every approval: pending first, then answered, newest first.
    async fn approvals(&self) -> Result<Vec<Approval>, String>;
    /// One approval by id; `Ok(None)` when there is no such row.
    async fn approval(&self, id: &str) -> Result<Option<Approval>, String>;
    /// Answers a card through `respond_to_approval`. The `Err` text is shown to the owner
    /// (e.g. "already approved by phone via cli at ...", "expired").
    async fn respond(
        &self,
        viewer: &Viewer,
        id: &str,
        decision: Decision,
        reason: Option<String>,
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
    /// Every loaded plugin with its tools' effect, gate and undo (the Plugins page).
    async fn plugins(&self) -> Result<PluginList, String>;
}
