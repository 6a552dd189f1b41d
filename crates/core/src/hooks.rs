//! PreToolUse hooks (DESIGN §2): run before a tool call in priority order (lower first) and
//! return allow, deny(reason) or require_approval(id?). A decision carrying an approval id halts
//! the run; one without (confirm-once advice) does not.
//!
//! [`DestructiveApprovalHook`] (priority 50, after every other deny) pins the call: the approval
//! row's request terms with the card from the plugin's `describe(args)`, returned as
//! `require_approval(row)`. The row is written by the approvals service in the same commit as
//! the paused run's checkpoint (DESIGN §9 "halt = 1 commit"), so a card never exists without it.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::approval::{kind_for, Ttl};
use crate::canonical::{call_hash, canonical_json};
use crate::manifest::{Gate, ToolSpec};
use crate::passkey::PasskeyPolicy;
use crate::plugin::{CallContext, Plugin};
use crate::ports::{Clock, NewApproval};
use crate::provenance::Provenance;
use crate::wire::Card;

/// A hook's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum HookDecision {
    /// Go on to the next hook, then run.
    Allow,
    /// Do not run; the reason becomes the observation.
    Deny(String),
    /// With a row: halt the run on that approval (its id is the row's). Without: advice only
    /// (confirm once).
    RequireApproval(Option<Box<NewApproval>>),
}

/// The call a hook looks at: resolved tool and normalised arguments.
pub struct PendingCall<'a> {
    /// The canonical tool.
    pub spec: &'a ToolSpec,
    /// Normalised arguments (what would be pinned).
    pub args: &'a Value,
    /// The plugin that owns the tool.
    pub plugin: &'a Arc<dyn Plugin>,
    /// The turn.
    pub ctx: &'a CallContext,
    /// What led to the call (who asked, the turn's steps, the outside text they read): frozen
    /// into the card as its trail and flags (docs/adr/0123-how-a-card-came-about.md).
    pub provenance: &'a Provenance,
}

/// A PreToolUse hook.
#[async_trait]
pub trait PreToolUseHook: Send + Sync {
    /// Lower runs first. DestructiveApprovalHook is 50, so denies at lower numbers win.
    fn priority(&self) -> i32;

    /// Decides about one call.
    async fn pre_tool_use(&self, call: &PendingCall<'_>) -> HookDecision;
}

/// `confirm: once` advice: returns `require_approval` without an id, which never halts
/// (DESIGN §2 "PreToolUse hook"; confirm once stays advice).
pub struct ConfirmOnceHook;

#[async_trait]
impl PreToolUseHook for ConfirmOnceHook {
    fn priority(&self) -> i32 {
        40
    }

    async fn pre_tool_use(&self, call: &PendingCall<'_>) -> HookDecision {
        if call.spec.gate() == Gate::Confirm {
            HookDecision::RequireApproval(None)
        } else {
            HookDecision::Allow
        }
    }
}

/// Pins one approval row per approved-per-call call and halts the run on it (DESIGN §3 step 3).
pub struct DestructiveApprovalHook {
    /// Time source for created/expires.
    pub clock: Arc<dyn Clock>,
    /// Answerable window.
    pub ttl: Ttl,
    /// Which cards need the owner's passkey (pinned into the row).
    pub passkeys: PasskeyPolicy,
}

/// DestructiveApprovalHook's priority: after every other PreToolUse deny (DESIGN §2).
pub const DESTRUCTIVE_APPROVAL_PRIORITY: i32 = 50;

#[async_trait]
impl PreToolUseHook for DestructiveApprovalHook {
    fn priority(&self) -> i32 {
        DESTRUCTIVE_APPROVAL_PRIORITY
    }

    async fn pre_tool_use(&self, call: &PendingCall<'_>) -> HookDecision {
        if !call.spec.approved_per_call() {
            return HookDecision::Allow;
        }
        match self.pin(call, None).await {
            Ok(row) => HookDecision::RequireApproval(Some(Box::new(row))),
            Err(refusal) => HookDecision::Deny(refusal),
        }
    }
}

impl DestructiveApprovalHook {
    /// The pinned row of `call` (an approved-per-call tool's, its arguments already validated
    /// and normalised): the plugin's `describe` called once and frozen into the card, one
    /// precondition per item or none, the kind, expiry and passkey need of the row. The one
    /// owner of a pinned row's terms, for IRIS's own agent and for the MCP gateway's agents
    /// (`requested_by`: the agent device that asked; `None` for IRIS's own assistant).
    ///
    /// # Errors
    /// The refusal sentence (the plugin refused the description, or its preconditions do not
    /// match its items); nothing is written.
    pub async fn pin(
        &self,
        call: &PendingCall<'_>,
        requested_by: Option<&str>,
    ) -> Result<NewApproval, String> {
        let spec = call.spec;
        // describe() is called once, here; its lines are frozen into the row.
        let description = call
            .plugin
            .describe(&spec.name, call.args, call.ctx)
            .await
            .map_err(|e| format!("{e}; nothing was changed"))?;
        // Staleness: one precondition per item, or none at all.
        if !description.preconditions.is_empty()
            && description.preconditions.len() != description.items.len()
        {
            return Err(format!(
                "the plugin described `{}` with {} preconditions for {} items (one per item is required); nothing was changed",
                spec.name,
                description.preconditions.len(),
                description.items.len()
            ));
        }
        let kind = kind_for(spec);
        let created_at = self.clock.now();
        // Whether the owner may approve some of the items: frozen with the card
        // (docs/adr/0122-shaping-a-call.md).
        let items_arg = crate::approvals::narrow::items_arg_for(
            spec.items.as_deref(),
            call.args,
            &description.items,
            &description.lines,
        );
        // The ids in the `items` argument of IRIS's own plugins (email ids, `root/path` ids)
        // are minted by IRIS, never the owner's words nor an outsider's: not flagged. A gateway
        // upstream's items (paths, names) are the upstream's, and are
        // (docs/adr/0123-how-a-card-came-about.md decision 3).
        let minted: Vec<String> = match (&spec.items, requested_by) {
            (Some(arg), None) => call.args[arg.as_str()]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        let flags = call
            .provenance
            .flags(call.args, &description.lines, &minted);
        Ok(NewApproval {
            id: uuid::Uuid::new_v4().to_string(),
            kind,
            tool: spec.name.clone(),
            args: call.args.clone(),
            args_canonical: canonical_json(call.args),
            call_hash: call_hash(&spec.name, call.args),
            items: description.items,
            card: Card {
                title: description.title,
                action: description.action,
                effect: spec.effect,
                lines: description.lines,
                undo_tool: spec.undo.clone(),
                undo_window_days: spec.undo_window_days,
                request: call.ctx.request.clone(),
                undo_note: description.undo_note,
                undo_action: description.undo_action,
                preview: description.preview,
                overlaps: Vec::new(),
                items_arg,
                editable: spec.editable.clone(),
                trail: call.provenance.trail(),
                flags,
            },
            run_id: call.ctx.run_id.clone(),
            context_summary: call.ctx.request.clone(),
            created_at,
            expires_at: self.ttl.expires_at(kind, created_at),
            preconditions: description.preconditions,
            passkey_required: self.passkeys.requires(kind),
            requested_by: requested_by.map(str::to_owned),
        })
    }
}
