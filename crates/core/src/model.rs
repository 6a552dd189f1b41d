//! The model the agent loop talks to, as a trait: any OpenAI-compatible server (server's HTTP
//! adapter) or a scripted one ([`crate::scripted`]). Messages are the chat transcript the loop
//! keeps; a tool result is always a JSON object (DESIGN §7, model adapter).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::manifest::ToolSpec;

/// One tool call the model proposes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The model's call id; every id gets exactly one result in the transcript.
    pub id: String,
    /// The name as the model wrote it (resolved by the registry before any check).
    pub name: String,
    /// Arguments as the model wrote them (a JSON object, or whatever the model sent).
    pub arguments: Value,
}

/// One message of the transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions for the model.
    System {
        /// Text.
        content: String,
    },
    /// What the owner said.
    User {
        /// Text.
        content: String,
    },
    /// What the model said and the calls it proposed.
    Assistant {
        /// Text, if any.
        content: Option<String>,
        /// Proposed calls.
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
    },
    /// The observation for one call id: always a JSON object.
    Tool {
        /// The call this answers.
        tool_call_id: String,
        /// The result object.
        content: Value,
    },
}

/// What the model answered for one step.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelTurn {
    /// Text for the owner (final when there are no calls).
    pub content: Option<String>,
    /// Proposed calls, in order.
    pub tool_calls: Vec<ToolCall>,
}

/// Why the model could not answer.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The server could not be reached or answered with an error.
    #[error("the model server failed: {0}")]
    Transport(String),
    /// The answer was not a chat completion the loop can use.
    #[error("the model's answer could not be used: {0}")]
    Protocol(String),
}

/// A chat model with tool calling.
#[async_trait]
pub trait Model: Send + Sync {
    /// One step: the transcript so far and the tools it may call.
    ///
    /// # Errors
    /// [`ModelError`] when the server is unreachable or its answer is unusable.
    async fn complete(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Result<ModelTurn, ModelError>;
}
