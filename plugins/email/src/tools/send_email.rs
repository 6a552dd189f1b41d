//! `send_email(to?, cc?, subject?, body, from?, reply_to_id?)` (effect write, `approval: pinned`):
//! sends one plain-text email through the configured outbox (DESIGN §5).
//!
//! **Normalise** (runs before any approval row is written, so a refusal never reaches a card)
//! checks every rule and pins everything the mail will contain. Rules:
//! - a transport must be configured (`IRIS_SMTP_URL`, or the demo outbox), else refused;
//! - every To/Cc address parses (lettre's `Address`), is lower-cased, duplicates dropped
//!   (a Cc already in To is dropped), at most [`MAX_RECIPIENTS`] in all, at least one To;
//! - every To/Cc address appears in the owner's request this turn (case-insensitive, as a whole
//!   address, not inside a longer one) or already in their mail: as a sender, recipient or cc
//!   of a stored message (any account), or as the Reply-To/From of the message replied to.
//!   An invented address is refused, naming it;
//! - subject single-line, at most [`MAX_SUBJECT_CHARS`]; body non-empty, at most
//!   [`MAX_BODY_CHARS`];
//! - the sender: `from` when given (an account name or address; unknown is refused), else the
//!   account that received the original of a reply, else the plugin's default sender
//!   (`IRIS_EMAIL_DEFAULT_SENDER`, an account name or address; naming no account is refused),
//!   else the first account in the configured order;
//! - `reply_to_id` (an email id from the store): fills To with the original's Reply-To, else
//!   From, when `to` is absent; the subject becomes "Re: " + (the given subject, else the
//!   original's), never doubled; In-Reply-To is the original's Message-ID and References the
//!   original's References plus its Message-ID.
//!
//! The normal form ([`Pinned`]) holds the sending account and address, To, Cc, subject, body,
//! In-Reply-To and References: what is approved is exactly what is sent. Normalising a normal
//! form again gives the same form.
//!
//! **Card** (kind `pinned_write`, "acts for you"): title "Send an email to Anna Weber" (names
//! from the store where known, "and N others" for more), action "Send email", lines From, To,
//! Cc, Subject, "In reply to", then every line of the body. Items: one per recipient
//! address (To then Cc), so the audit has one entry per person the mail went to.
//!
//! **Execute** builds the message from the pinned arguments only, with an explicit Message-ID
//! `<uuid@sender-domain>` and the plugin clock's Date, hands it to the outbox once (never a
//! retry; an unknown outcome is an error the core records), then stores a copy in the account's
//! Sent folder (`MailBackend::append_sent`) and stores that copy in the local store so it shows in searches. A
//! failed copy is reported in the result; the mail is never sent a second time. The result's
//! `summary` says in one sentence what happened ("saved to the demo outbox, not sent" in the
//! demo).
//!
//! The verbs live beside this file: `normalise.rs` (the rules, one step each),
//! `address.rs` (reading addresses and whether the owner's mail knows them), `card.rs` (the
//! card) and `execute.rs` (the send, the Sent copy, the result).

mod address;
mod card;
mod execute;
mod normalise;

use iris_core::plugin::ToolError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{failed, invalid};

pub use card::describe;
pub use execute::execute;
pub use normalise::normalise;

/// The sent email as a step of a card's "How this came about": "Sent an email to
/// anna@example.net: 'Re: Lunch'" (docs/adr/0123-how-a-card-came-about.md).
pub fn step(result: &Value) -> String {
    let to: Vec<&str> = result["to"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let subject = result["subject"].as_str().unwrap_or_default();
    format!("Sent an email to {}: '{subject}'", to.join(", "))
}

/// The tool's name.
pub const NAME: &str = "send_email";

/// Most recipients (To and Cc together) one call may name.
pub const MAX_RECIPIENTS: usize = 50;

/// Longest subject, in characters.
pub const MAX_SUBJECT_CHARS: usize = 200;

/// Longest body, in characters.
pub const MAX_BODY_CHARS: usize = 20_000;

/// Longest card line, in characters (longer ones end in "…").
const CARD_LINE_CHARS: usize = 160;

/// The arguments the model may give (the manifest's properties), plus the keys of the normal
/// form so that normalising a normal form is accepted (and gives it back). `account`,
/// `in_reply_to` and `references` given as input are ignored: they are always recomputed from
/// `from`/the default and `reply_to_id`, never trusted.
const ALLOWED: &[&str] = &[
    "to",
    "cc",
    "subject",
    "body",
    "from",
    "reply_to_id",
    "account",
    "in_reply_to",
    "references",
];

/// The normal form: everything the mail will contain, pinned in the approval row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pinned {
    /// The sending account's name (where the Sent copy goes).
    pub account: String,
    /// The sending address (that account's address).
    pub from: String,
    /// To addresses, lower-case, at least one.
    pub to: Vec<String>,
    /// Cc addresses, lower-case, none in `to`.
    pub cc: Vec<String>,
    /// The subject, one line.
    pub subject: String,
    /// The plain-text body.
    pub body: String,
    /// The email id replied to, if any.
    pub reply_to_id: Option<String>,
    /// In-Reply-To (a Message-ID without angle brackets), if any.
    pub in_reply_to: Option<String>,
    /// References, oldest first, without angle brackets.
    pub references: Vec<String>,
}

/// A local store failure, as this tool's failure.
fn store_err(e: sqlx::Error) -> ToolError {
    failed(NAME, format!("local store: {e}"))
}

/// A string argument; `None` when absent or null.
fn opt_str<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, ToolError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(invalid(NAME, format!("`{key}` must be a string"))),
    }
}

/// The pinned form of `args` (what `normalise` returned, as the row holds it); anything else
/// is refused, with nothing sent.
fn pinned_of(args: &Value) -> Result<Pinned, ToolError> {
    serde_json::from_value(args.clone()).map_err(|e| {
        invalid(
            NAME,
            format!("the arguments are not send_email's pinned form ({e}); nothing was sent"),
        )
    })
}

#[cfg(test)]
mod tests;
