//! What an approval chose when it was not the whole pinned call ([`DecidedCall`]): the owner
//! approved some of the card's items (docs/adr/0122-shaping-a-call.md), and the call that runs
//! is a term of the decision, written once with it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Approval, ApprovalStatus};

/// The call an approval runs when it differs from the request's: the request's tool with only
/// the kept items in its `items` argument, and its own call hash (hex SHA-256 of `tool` + NUL +
/// canonical `args`, as the request's). Written once with the decision; the database refuses a
/// claim of any other call (migrations `0033_decided_call`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DecidedCall {
    /// The tool (always the request's).
    pub tool: String,
    /// The arguments that run.
    pub args: Value,
    /// Hex SHA-256 of `tool` + NUL + the canonical JSON of `args`.
    pub call_hash: String,
    /// For an edited call: the items it acts on (an edit of the recipients changes them).
    /// Empty otherwise (an approval of some items runs the kept items of the request).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<String>,
}

/// An edited call as it will run, before the owner confirms it (the web card's review; docs/
/// adr/0122-shaping-a-call.md): checked as the approval will check it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditReview {
    /// The arguments that changed (empty when the edit is the pinned call).
    pub edited_fields: Vec<String>,
    /// The edited call with its own hash; `None` when it is the pinned call.
    pub call: Option<DecidedCall>,
    /// The card's lines for the edited call.
    pub lines: Vec<String>,
    /// Its preview (for a file write, the change against the file as it is now).
    pub preview: Vec<String>,
}

impl Approval {
    /// Whether the owner may approve only some of this card's items: the card names the list
    /// argument that holds them ([`super::Card::items_arg`], one entry per item and one line
    /// per item), it has at least two, and it is still waiting.
    pub fn narrowable(&self) -> bool {
        self.status == ApprovalStatus::Pending
            && self.card.items_arg.is_some()
            && self.items.len() >= 2
            && self.card.lines.len() == self.items.len()
    }

    /// The indices into `items` an approval of some items left out, ascending (empty for a
    /// full approval and for every card not approved in part).
    pub fn left_out_indices(&self) -> Vec<usize> {
        match &self.approved_items {
            Some(kept) => (0..self.items.len())
                .filter(|i| !kept.iter().any(|&k| k as usize == *i))
                .collect(),
            None => Vec::new(),
        }
    }

    /// The fields the owner edited, in words: "the body", "the subject and the body", "the
    /// recipients, the subject and the body" (`to` is "the recipients"); `None` for a call not
    /// edited.
    pub fn edited_words(&self) -> Option<String> {
        let fields = self.edited_fields.as_ref().filter(|f| !f.is_empty())?;
        let named: Vec<String> = fields
            .iter()
            .map(|f| match f.as_str() {
                "to" => "the recipients".to_string(),
                other => format!("the {other}"),
            })
            .collect();
        Some(match named.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => String::new(),
        })
    }

    /// `(kept, of)` for an approval of some of the card's items ("Approved 3 of 5"); `None` for
    /// any other card.
    pub fn approved_share(&self) -> Option<(usize, usize)> {
        self.approved_items
            .as_ref()
            .map(|kept| (kept.len(), self.items.len()))
    }

    /// How every surface says an approval of some items: "Approved 3 of 5". `None` for any
    /// other card.
    pub fn approved_share_text(&self) -> Option<String> {
        self.approved_share()
            .map(|(kept, of)| format!("Approved {kept} of {of}"))
    }

    /// The card's lines for the items an approval of some items left out (the line where the
    /// card has one per item, else the item id), in the card's order.
    pub fn left_out_lines(&self) -> Vec<String> {
        self.left_out_indices()
            .into_iter()
            .map(|i| {
                self.card
                    .lines
                    .get(i)
                    .filter(|_| self.card.lines.len() == self.items.len())
                    .or_else(|| self.items.get(i))
                    .cloned()
                    .unwrap_or_default()
            })
            .collect()
    }
}
