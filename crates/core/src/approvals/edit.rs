//! Editing a call before approving it (docs/adr/0122-shaping-a-call.md): the owner changes
//! arguments the card lets them edit (the manifest's `editable`, frozen as `card.editable`);
//! the edited call goes through the same checks as the model's call (each edited value against
//! its parameter's schema, the plugin's `normalise` with its rules, judged against the owner's
//! request of the card's own turn) and is described again for its items. It is pinned as a term of the decision under its
//! own hash and runs exactly once ([`super::narrow::call_to_run`]).

use serde_json::{Map, Value};

use super::ApprovalService;
use crate::canonical::{call_hash, canonical_json};
use crate::plugin::{CallContext, Description};
use crate::ports::DecidedTerms;
use crate::wire::{Approval, DecidedCall, Decision, EditReview};

/// Why an edit was refused (400 at the API; the card stays waiting and nothing changed). Each
/// names the field or the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditRefusal {
    /// `edits` came with a rejection.
    #[error("`edits` only goes with \"approve\": a rejection rejects the whole card; nothing was changed")]
    OnReject,
    /// Nothing to change.
    #[error("`edits` is empty: name at least one field to change, or approve the call as it is; nothing was changed")]
    Empty,
    /// Both a choice of items and edits.
    #[error(
        "approve some of the items or edit the call, not both in one answer; nothing was changed"
    )]
    WithItems,
    /// A field the card does not let the owner edit.
    #[error("`{field}` cannot be edited on this card ({editable}); nothing was changed")]
    NotEditable {
        /// The field.
        field: String,
        /// Which fields may be, in words.
        editable: String,
    },
    /// The edited call breaks one of the tool's rules.
    #[error("the edited call was refused: {0}; the card is still waiting and nothing was changed")]
    Refused(String),
    /// Normalising the edit changed another argument too.
    #[error(
        "the edit also changes `{0}`, which cannot be edited on this card; nothing was changed"
    )]
    ChangesOther(String),
    /// The edit changes what a call with pinned preconditions acts on.
    #[error("the edit changes what the call acts on, which this card pins as it was; approve or reject it as it is; nothing was changed")]
    OtherItems,
}

impl ApprovalService {
    /// The decision's terms for approving `row` with `edits` (field → new value): `Ok(None)`
    /// when the edited call is the pinned one (a plain approval); `Ok(Some)` with the edited
    /// call, its items, the fields that changed and its own hash.
    ///
    /// # Errors
    /// As [`ApprovalService::edited_call`].
    pub async fn edited_terms(
        &self,
        row: &Approval,
        decision: Decision,
        items: Option<&[u32]>,
        edits: &Map<String, Value>,
    ) -> Result<Option<DecidedTerms>, EditRefusal> {
        Ok(self
            .edited_call(row, decision, items, edits)
            .await?
            .map(|(terms, _)| terms))
    }

    /// [`ApprovalService::edited_terms`] with the edited call's description as its plugin gives
    /// it (its lines and its preview: for a file write, the change against the file now).
    ///
    /// # Errors
    /// [`EditRefusal`]: with a rejection or a choice of items; empty; a field the card does not
    /// let the owner edit; the edited call refused by the tool's schema or the plugin's rules
    /// (naming the field and the rule, e.g. an invented address); an edit that changes another
    /// argument, or what a call with pinned preconditions acts on.
    pub async fn edited_call(
        &self,
        row: &Approval,
        decision: Decision,
        items: Option<&[u32]>,
        edits: &Map<String, Value>,
    ) -> Result<Option<(DecidedTerms, Description)>, EditRefusal> {
        if decision == Decision::Reject {
            return Err(EditRefusal::OnReject);
        }
        if items.is_some() {
            return Err(EditRefusal::WithItems);
        }
        if edits.is_empty() {
            return Err(EditRefusal::Empty);
        }
        let editable = &row.card.editable;
        if let Some(field) = edits.keys().find(|f| !editable.contains(f)) {
            return Err(EditRefusal::NotEditable {
                field: field.clone(),
                editable: if editable.is_empty() {
                    "it is approved as it is".into()
                } else {
                    format!("it may edit {}", editable.join(", "))
                },
            });
        }
        let mut args = row.args.clone();
        let Some(fields) = args.as_object_mut() else {
            return Err(EditRefusal::Refused(
                "the pinned call has no arguments to edit".into(),
            ));
        };
        for (field, value) in edits {
            fields.insert(field.clone(), value.clone());
        }
        let toolbox = self.toolbox_for(row.requested_by.as_deref());
        let refused = |why: String| EditRefusal::Refused(why);
        let spec = toolbox
            .registry()
            .get(&row.tool)
            .ok_or_else(|| refused(format!("`{}` is not loaded any more", row.tool)))?;
        let plugin = toolbox
            .plugin(spec)
            .ok_or_else(|| refused(format!("`{}` cannot run here any more", row.tool)))?;
        // The same checks as the model's call, judged against the owner's request of the
        // card's own turn (an address the owner typed there may be written to).
        let ctx = CallContext {
            run_id: row.run_id.clone(),
            conversation_id: String::new(),
            request: row.card.request.clone(),
        };
        // Each edited value against its parameter's schema (the pinned form holds fields the
        // model never writes, so the whole object is checked by the plugin's rules below).
        for (field, value) in edits {
            let schema = &spec.parameters["properties"][field];
            let validator = jsonschema::validator_for(schema).map_err(|e| {
                refused(format!(
                    "`{field}`: the tool's schema does not compile: {e}"
                ))
            })?;
            let errors: Vec<String> = validator
                .iter_errors(value)
                .map(|e| e.to_string())
                .collect();
            if !errors.is_empty() {
                return Err(refused(format!("`{field}`: {}", errors.join("; "))));
            }
        }
        let args = plugin
            .normalise(&row.tool, args, &ctx)
            .await
            .map_err(|e| refused(e.to_string()))?;
        if args == row.args {
            return Ok(None);
        }
        let (Some(before), Some(after)) = (row.args.as_object(), args.as_object()) else {
            return Err(refused("the edited call has no arguments".into()));
        };
        let mut changed: Vec<String> = Vec::new();
        for field in before.keys().chain(after.keys()) {
            if before.get(field) != after.get(field) && !changed.contains(field) {
                changed.push(field.clone());
            }
        }
        if let Some(other) = changed.iter().find(|f| !editable.contains(f)) {
            return Err(EditRefusal::ChangesOther(other.clone()));
        }
        let description = plugin
            .describe(&row.tool, &args, &ctx)
            .await
            .map_err(|e| refused(e.to_string()))?;
        if description.items != row.items && !description.preconditions.is_empty() {
            return Err(EditRefusal::OtherItems);
        }
        changed.sort();
        Ok(Some((
            DecidedTerms {
                items: Vec::new(),
                edited_fields: changed,
                args_canonical: canonical_json(&args),
                call: DecidedCall {
                    tool: row.tool.clone(),
                    call_hash: call_hash(&row.tool, &args),
                    items: description.items.clone(),
                    args,
                },
            },
            description,
        )))
    }

    /// The edited call as it will run, before the owner confirms it (the web card's "Review"):
    /// checked as the approval will check it, described by its plugin (its lines; for a file
    /// write, the change against the file as it is now). Changes nothing.
    ///
    /// # Errors
    /// [`RespondError::Forbidden`] for read scope; `NotFound`; `AlreadyDecided`/`Expired` when
    /// the card can no longer be answered; `Edit` for an edit the approval would refuse.
    pub async fn review_edit(
        &self,
        id: &str,
        edits: &Map<String, Value>,
        actor: &super::Actor,
    ) -> Result<EditReview, super::RespondError> {
        let row = self.answerable(id, actor, self.clock.now()).await?;
        Ok(
            match self
                .edited_call(&row, Decision::Approve, None, edits)
                .await?
            {
                Some((terms, description)) => EditReview {
                    edited_fields: terms.edited_fields,
                    call: Some(terms.call),
                    lines: description.lines,
                    preview: description.preview,
                },
                None => EditReview {
                    edited_fields: Vec::new(),
                    call: None,
                    lines: row.card.lines.clone(),
                    preview: row.card.preview.clone(),
                },
            },
        )
    }
}
