//! The card and what a row says about other work: what the owner sees, frozen into the row
//! ([`Card`]), the cards it repeats ([`CardOverlap`]), and who runs its job now
//! ([`RunningJob`]). Part of the wire types (see the parent module).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{rfc3339, Effect};

/// What the owner sees, frozen into the row when it is written (DESIGN §2 "card").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Card {
    /// Heading, e.g. "Trash 3 emails".
    pub title: String,
    /// The approve button's words, e.g. "Trash 3 emails".
    pub action: String,
    /// The tool's declared effect.
    pub effect: Effect,
    /// One line per item, from the plugin's `describe(args)` ("subject — sender, date").
    pub lines: Vec<String>,
    /// The tool that reverses this one, if the manifest declares one.
    pub undo_tool: Option<String>,
    /// For how many days the undo stays possible.
    pub undo_window_days: Option<u32>,
    /// What the owner asked, shown as "You asked: …".
    pub request: String,
    /// The undo sentence in the plugin's words ("You can restore these from Trash for 30
    /// days"); extends DESIGN §7's card.
    #[serde(default)]
    pub undo_note: Option<String>,
    /// The undo button's words in the plugin's terms (e.g. "Restore 5 emails"), shown on an
    /// executed card within its undo window; `None` on cards written before it existed (the
    /// button then says "Undo").
    #[serde(default)]
    pub undo_action: Option<String>,
    /// What will change, line by line, when the card is approved (for a file write through
    /// the MCP gateway, a unified diff against the file as it was when the card was made,
    /// bounded with an "N more lines" count); empty for cards without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preview: Vec<String>,
    /// Other cards this one repeats, as they stood when it was made (docs/liveness.md "a card
    /// says what it repeats"): cards still waiting that pin some of the same items or the
    /// exact same call, and cards whose exact same call ran in the last hour. Empty for most
    /// cards; every surface shows each one before anyone approves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlaps: Vec<CardOverlap>,
    /// The list argument that names the call's items, when the owner may approve only some of
    /// them: set when the card was made, only where that argument holds exactly the card's
    /// `items` in order and the card has one line per item (docs/adr/0122-shaping-a-call.md).
    /// Absent otherwise (all or nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_arg: Option<String>,
    /// The arguments the owner may edit before approving (the manifest's `editable`), frozen
    /// with the card (docs/adr/0122-shaping-a-call.md). Empty: the call is approved as pinned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub editable: Vec<String>,
    /// "How this came about", frozen with the card (docs/adr/0123-how-a-card-came-about.md):
    /// who asked (the owner's message, or the agent and its stated reason), then the steps of
    /// the turn that led to the call, oldest first; at most 21 sentences of at most 200
    /// characters each. Empty on cards made before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trail: Vec<String>,
    /// Argument values of the call that the owner never wrote but that occur in text from
    /// outside read during the turn (an email's text, an upstream's result), each on its line
    /// of `lines`. They say where a value came from and decide nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<CardFlag>,
}

/// A value on a card's line that came from text outside the owner's control ([`Card::flags`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CardFlag {
    /// Index into the card's `lines`.
    pub line: u32,
    /// Where the value came from: "“bob@evil.example” is from the text of the email 'Payment
    /// overdue' (not from you)".
    pub note: String,
}

/// How another card stood when a card that repeats it was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum OverlapState {
    /// It was waiting for the owner.
    Waiting,
    /// It was approved and its call ran.
    Ran,
    /// It was approved, and whether its call ran is not known (its server stopped mid-call; it
    /// is never run again): the change may already be done.
    MayHaveRun,
}

/// Another card a new card repeats ([`Card::overlaps`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CardOverlap {
    /// The other card's approval id.
    pub approval_id: String,
    /// Its title ("Trash 3 emails").
    pub title: String,
    /// Waiting, or its call ran.
    pub state: OverlapState,
    /// When it was made (waiting), or when it was approved to run (ran).
    #[serde(deserialize_with = "rfc3339::deserialize")]
    pub at: DateTime<Utc>,
    /// Whether it pins exactly this call (the same tool and canonical arguments).
    pub same_call: bool,
    /// How many of this card's items it pins too (0 when neither card names items).
    pub shared_items: u32,
}

/// Who runs a decided card's job right now, as the card and `iris approvals show` say it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunningJob {
    /// The server holding the job's lease (`iris@HOST:PID-…`).
    pub holder: String,
    /// When that server took the job; `None` for a job taken before this was recorded.
    #[serde(default, deserialize_with = "rfc3339::deserialize_option")]
    pub since: Option<DateTime<Utc>>,
    /// Until when its lease lasts without a heartbeat; after that any server takes the job
    /// over.
    #[serde(default, deserialize_with = "rfc3339::deserialize_option")]
    pub lease_until: Option<DateTime<Utc>>,
}
