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

use std::collections::HashSet;
use std::str::FromStr;

use iris_core::plugin::{CallContext, Description, ItemOutcome, ToolError, ToolOutput};
use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::{Address, Message};
use mail_parser::MessageParser;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{failed, invalid, object};
use crate::backend::{AccountInfo, MessageRef};
use crate::outbox::Delivery;
use crate::parse::Person;
use crate::store::MessageRow;
use crate::EmailPlugin;

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

/// A list of addresses: an array of strings (a single string is taken as a one-item list).
/// Each may be `addr` or `Name <addr>`; the result is the lower-case address.
fn address_list(obj: &Map<String, Value>, key: &str) -> Result<Vec<String>, ToolError> {
    let items: Vec<&Value> = match obj.get(key) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v @ Value::String(_)) => vec![v],
        Some(_) => {
            return Err(invalid(
                NAME,
                format!("`{key}` must be a list of email addresses"),
            ))
        }
    };
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let Value::String(s) = item else {
            return Err(invalid(NAME, format!("`{key}[{i}]` is not a string")));
        };
        let addr = parse_address(s).map_err(|reason| {
            invalid(
                NAME,
                format!(
                    "`{key}[{i}]` `{}` is not an email address: {reason}",
                    s.trim()
                ),
            )
        })?;
        if !out.contains(&addr) {
            out.push(addr);
        }
    }
    Ok(out)
}

/// Parses `addr` or `Name <addr>` with lettre's parser; returns the address, lower-cased (one
/// normal form; every provider IRIS talks to treats addresses case-insensitively).
fn parse_address(s: &str) -> Result<String, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty".into());
    }
    let address = match Address::from_str(s) {
        Ok(a) => a,
        Err(_) => Mailbox::from_str(s).map_err(|e| e.to_string())?.email,
    };
    Ok(address.to_string().to_lowercase())
}

/// Whether `address` (lower-case) occurs in `request` as a whole address: case-insensitive, and
/// not as part of a longer one (`nna@example.org` is not in "anna@example.org").
pub(crate) fn in_request(request: &str, address: &str) -> bool {
    let hay = request.to_lowercase();
    let is_addr_char = |c: char| c.is_alphanumeric() || "._%+-@".contains(c);
    let mut from = 0;
    while let Some(pos) = hay[from..].find(address) {
        let start = from + pos;
        let end = start + address.len();
        let before_ok = hay[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !is_addr_char(c));
        let after = &hay[end..];
        let after_ok = match after.chars().next() {
            None => true,
            // A trailing '.' ends a sentence ("write to anna@example.org."), unless more of an
            // address follows ("anna@example.org.uk").
            Some('.') => !after[1..].chars().next().is_some_and(is_addr_char),
            Some(c) => !is_addr_char(c),
        };
        if before_ok && after_ok {
            return true;
        }
        from = start + 1;
        while !hay.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}

fn person_list(json_text: &str) -> Vec<Person> {
    serde_json::from_str(json_text).unwrap_or_default()
}

/// What the store knows of one address: whether it occurs at all (sender, recipient or cc), and
/// a display name for it when one was seen.
async fn known_person(
    plugin: &EmailPlugin,
    address: &str,
) -> Result<(bool, Option<String>), ToolError> {
    let rows = plugin
        .store()
        .people_with_address(address)
        .await
        .map_err(store_err)?;
    let mut known = false;
    let mut name = None;
    for (from_name, from_address, to, cc) in rows {
        let mut people = vec![Person {
            name: from_name,
            address: from_address,
        }];
        people.extend(person_list(&to));
        people.extend(person_list(&cc));
        for p in people {
            if p.address.as_deref().map(str::to_lowercase).as_deref() == Some(address) {
                known = true;
                if name.is_none() {
                    name = p.name.filter(|n| !n.trim().is_empty());
                }
            }
        }
    }
    Ok((known, name))
}

/// The account named by `word` (its name or its address, case-insensitive).
fn account_named<'a>(accounts: &'a [AccountInfo], word: &str) -> Option<&'a AccountInfo> {
    let w = word.trim().to_lowercase();
    accounts
        .iter()
        .find(|a| a.name.to_lowercase() == w || a.address.to_lowercase() == w)
}

fn account_list(accounts: &[AccountInfo]) -> String {
    accounts
        .iter()
        .map(|a| format!("{} <{}>", a.name, a.address))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "Re: " + `subject` unless it already starts with "Re:" (any case).
fn re_subject(subject: &str) -> String {
    let s = subject.trim();
    if s.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("re:")) {
        s.to_string()
    } else {
        format!("Re: {s}")
    }
}

/// The original of a reply, with the addresses a reply goes to (Reply-To, else From).
struct Original {
    row: MessageRow,
    reply_addresses: Vec<String>,
}

async fn original(plugin: &EmailPlugin, id: &str) -> Result<Original, ToolError> {
    let id = id.trim().to_lowercase();
    let Some(row) = plugin.store().get(&id).await.map_err(store_err)? else {
        return Err(invalid(
            NAME,
            format!("`reply_to_id`: no email with id `{id}` in the local store; use an id from search_inbox"),
        ));
    };
    let Some(backend) = plugin.backend(&row.account) else {
        return Err(invalid(
            NAME,
            format!("`reply_to_id`: email `{id}` belongs to account `{}`, which is not configured any more", row.account),
        ));
    };
    // Reply-To is not kept in the store: read the original. If it cannot be read, refuse rather
    // than guess (a reply must not go to From when the sender asked for replies elsewhere).
    let raw = backend
        .read(&MessageRef {
            folder: row.folder.clone(),
            key: row.provider_key.clone(),
            location: row.location.clone(),
        })
        .await
        .map_err(|e| {
            failed(
                NAME,
                format!("cannot read email `{id}` to find its Reply-To: {e}; nothing was sent"),
            )
        })?
        .ok_or_else(|| {
            invalid(
                NAME,
                format!("`reply_to_id`: email `{id}` is no longer in its folder; search again"),
            )
        })?;
    let reply_to: Vec<String> = MessageParser::default()
        .parse(&raw)
        .and_then(|m| {
            m.reply_to().map(|a| {
                a.iter()
                    .filter_map(|p| p.address())
                    .filter_map(|s| parse_address(s).ok())
                    .collect::<Vec<_>>()
            })
        })
        .unwrap_or_default();
    let reply_addresses = if reply_to.is_empty() {
        row.from_address
            .as_deref()
            .and_then(|a| parse_address(a).ok())
            .into_iter()
            .collect()
    } else {
        reply_to
    };
    Ok(Original {
        row,
        reply_addresses,
    })
}

/// Validates a call and returns its normal form (see the module docs for every rule).
///
/// # Errors
/// [`ToolError::InvalidArgs`] naming the rule broken (an invented address names the address);
/// [`ToolError::Failed`] when the store or the original message cannot be read.
pub async fn normalise(
    plugin: &EmailPlugin,
    args: &Value,
    ctx: &CallContext,
) -> Result<Value, ToolError> {
    if plugin.outbox().is_none() {
        return Err(invalid(
            NAME,
            "no IRIS_SMTP_URL is configured, so IRIS cannot send mail; nothing was sent (the owner can set IRIS_SMTP_URL, e.g. smtp://127.0.0.1:2525)",
        ));
    }
    let obj = object(NAME, args, ALLOWED)?;
    let accounts = plugin.accounts();
    if accounts.is_empty() {
        return Err(invalid(
            NAME,
            "no mail account is configured, so there is no sender; nothing was sent",
        ));
    }

    let reply_to_id = opt_str(obj, "reply_to_id")?
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty());
    let original = match &reply_to_id {
        Some(id) => Some(original(plugin, id).await?),
        None => None,
    };

    // Sender.
    let account = if let Some(word) = opt_str(obj, "from")?.filter(|s| !s.trim().is_empty()) {
        account_named(&accounts, word).ok_or_else(|| {
            invalid(
                NAME,
                format!(
                    "`from` `{}` names no mail account (accounts: {}); nothing was sent",
                    word.trim(),
                    account_list(&accounts)
                ),
            )
        })?
    } else if let Some(o) = &original {
        accounts
            .iter()
            .find(|a| a.name == o.row.account)
            .ok_or_else(|| {
                invalid(
                    NAME,
                    format!(
                        "the original's account `{}` is not configured",
                        o.row.account
                    ),
                )
            })?
    } else if let Some(word) = plugin.default_sender() {
        account_named(&accounts, word).ok_or_else(|| {
            invalid(
                NAME,
                format!(
                    "IRIS_EMAIL_DEFAULT_SENDER `{word}` names no mail account (accounts: {}); nothing was sent",
                    account_list(&accounts)
                ),
            )
        })?
    } else {
        &accounts[0]
    };
    let from = parse_address(&account.address).map_err(|reason| {
        invalid(
            NAME,
            format!(
                "account `{}` has an unusable address `{}`: {reason}",
                account.name, account.address
            ),
        )
    })?;

    // Recipients.
    let mut to = address_list(obj, "to")?;
    if to.is_empty() {
        if let Some(o) = &original {
            to.clone_from(&o.reply_addresses);
        }
    }
    if to.is_empty() {
        return Err(invalid(
            NAME,
            match &original {
                Some(o) => format!(
                    "`to` is empty and email `{}` has no Reply-To or From address to reply to",
                    o.row.id
                ),
                None => "`to` is required: at least one recipient address".to_string(),
            },
        ));
    }
    let cc: Vec<String> = address_list(obj, "cc")?
        .into_iter()
        .filter(|a| !to.contains(a))
        .collect();
    if to.len() + cc.len() > MAX_RECIPIENTS {
        return Err(invalid(
            NAME,
            format!(
                "{} recipients; at most {MAX_RECIPIENTS} per email",
                to.len() + cc.len()
            ),
        ));
    }
    let from_original: HashSet<&str> = original
        .iter()
        .flat_map(|o| o.reply_addresses.iter().map(String::as_str))
        .collect();
    let mut unknown = Vec::new();
    for addr in to.iter().chain(&cc) {
        if from_original.contains(addr.as_str()) || in_request(&ctx.request, addr) {
            continue;
        }
        if !known_person(plugin, addr).await?.0 {
            unknown.push(addr.clone());
        }
    }
    if !unknown.is_empty() {
        return Err(invalid(
            NAME,
            format!(
                "{} {} neither in the owner's request this turn nor in their mail (as a sender, recipient or cc), so IRIS will not write to {}; ask the owner for the exact address. Nothing was sent",
                unknown.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", "),
                if unknown.len() == 1 { "is" } else { "are" },
                if unknown.len() == 1 { "it" } else { "them" },
            ),
        ));
    }

    // Subject and body.
    let given_subject = opt_str(obj, "subject")?
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let subject = match (&original, given_subject) {
        (Some(o), given) => re_subject(given.unwrap_or(&o.row.subject)),
        (None, Some(s)) => s.to_string(),
        (None, None) => {
            return Err(invalid(NAME, "`subject` is required (one line)"));
        }
    };
    if subject.contains(['\r', '\n']) {
        return Err(invalid(NAME, "`subject` must be a single line"));
    }
    if subject.chars().count() > MAX_SUBJECT_CHARS {
        return Err(invalid(
            NAME,
            format!("`subject` is longer than {MAX_SUBJECT_CHARS} characters"),
        ));
    }
    let body = opt_str(obj, "body")?.unwrap_or("").replace("\r\n", "\n");
    if body.trim().is_empty() {
        return Err(invalid(
            NAME,
            "`body` is empty: write the text of the email",
        ));
    }
    if body.chars().count() > MAX_BODY_CHARS {
        return Err(invalid(
            NAME,
            format!("`body` is longer than {MAX_BODY_CHARS} characters"),
        ));
    }

    // Threading.
    let (in_reply_to, references) = match &original {
        Some(o) => {
            let mut refs: Vec<String> = serde_json::from_str(&o.row.refs).unwrap_or_default();
            if let Some(mid) = &o.row.message_id {
                if !refs.contains(mid) {
                    refs.push(mid.clone());
                }
            }
            (o.row.message_id.clone(), refs)
        }
        None => (None, Vec::new()),
    };

    let pinned = Pinned {
        account: account.name.clone(),
        from,
        to,
        cc,
        subject,
        body,
        reply_to_id: original.as_ref().map(|o| o.row.id.clone()),
        in_reply_to,
        references,
    };
    serde_json::to_value(&pinned).map_err(|e| failed(NAME, e))
}

fn pinned_of(args: &Value) -> Result<Pinned, ToolError> {
    serde_json::from_value(args.clone()).map_err(|e| {
        invalid(
            NAME,
            format!("the arguments are not send_email's pinned form ({e}); nothing was sent"),
        )
    })
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= CARD_LINE_CHARS {
        s.to_string()
    } else {
        let cut: String = s.chars().take(CARD_LINE_CHARS - 1).collect();
        format!("{cut}…")
    }
}

async fn display(plugin: &EmailPlugin, address: &str) -> Result<(String, String), ToolError> {
    let name = known_person(plugin, address).await?.1;
    Ok(match name {
        Some(n) => (n.clone(), format!("{n} <{address}>")),
        None => (address.to_string(), address.to_string()),
    })
}

/// The card (see the module docs).
///
/// # Errors
/// [`ToolError::InvalidArgs`] when `args` is not the pinned form; [`ToolError::Failed`] when
/// the store cannot be read.
pub async fn describe(plugin: &EmailPlugin, args: &Value) -> Result<Description, ToolError> {
    let p = pinned_of(args)?;
    let mut to_shown = Vec::with_capacity(p.to.len());
    let mut first_name = String::new();
    for (i, a) in p.to.iter().enumerate() {
        let (name, shown) = display(plugin, a).await?;
        if i == 0 {
            first_name = name;
        }
        to_shown.push(shown);
    }
    let mut cc_shown = Vec::with_capacity(p.cc.len());
    for a in &p.cc {
        cc_shown.push(display(plugin, a).await?.1);
    }
    let others = p.to.len() + p.cc.len() - 1;
    let title = match others {
        0 => format!("Send an email to {first_name}"),
        1 => format!("Send an email to {first_name} and 1 other"),
        n => format!("Send an email to {first_name} and {n} others"),
    };
    // Everything that goes out is on the card, whole: recipients, subject and every line of the
    // body (blank lines too), so approving never sends words the owner did not see (a
    // hidden last line was once found). Only the "in reply to" context line is shortened.
    let mut lines = vec![
        format!("From: {}", p.from),
        format!("To: {}", to_shown.join(", ")),
    ];
    if !cc_shown.is_empty() {
        lines.push(format!("Cc: {}", cc_shown.join(", ")));
    }
    lines.push(format!("Subject: {}", p.subject));
    if let Some(id) = &p.reply_to_id {
        if let Some(o) = plugin.store().get(id).await.map_err(store_err)? {
            lines.push(shorten(&format!("In reply to: {}", super::row_line(&o))));
        }
    }
    for l in p.body.trim_end().lines() {
        lines.push(format!("│ {}", l.trim_end()));
    }
    Ok(Description {
        title,
        action: "Send email".into(),
        lines,
        items: p.to.iter().chain(&p.cc).cloned().collect(),
        undo_note: None,
        undo_action: None,
        preconditions: Vec::new(),
        ..Description::default()
    })
}

fn mailbox(tool_field: &str, addr: &str) -> Result<Mailbox, ToolError> {
    let a = Address::from_str(addr).map_err(|e| {
        invalid(
            NAME,
            format!("pinned `{tool_field}` `{addr}` is not an address: {e}; nothing was sent"),
        )
    })?;
    Ok(Mailbox::new(None, a))
}

/// The message exactly as pinned, with `message_id` (no brackets) and the plugin clock's Date.
fn build_message(plugin: &EmailPlugin, p: &Pinned, message_id: &str) -> Result<Message, ToolError> {
    let mut b = Message::builder()
        .from(mailbox("from", &p.from)?)
        .subject(p.subject.clone())
        .message_id(Some(format!("<{message_id}>")))
        .date(std::time::SystemTime::from(plugin.now()));
    for a in &p.to {
        b = b.to(mailbox("to", a)?);
    }
    for a in &p.cc {
        b = b.cc(mailbox("cc", a)?);
    }
    if let Some(irt) = &p.in_reply_to {
        b = b.in_reply_to(format!("<{irt}>"));
    }
    if !p.references.is_empty() {
        b = b.references(
            p.references
                .iter()
                .map(|r| format!("<{r}>"))
                .collect::<Vec<_>>()
                .join(" "),
        );
    }
    b.header(ContentType::TEXT_PLAIN)
        .body(p.body.clone())
        .map_err(|e| {
            failed(
                NAME,
                format!("the message could not be built: {e}; nothing was sent"),
            )
        })
}

/// Sends the pinned mail once, then stores the Sent copy in the mailbox and the local store (see the module docs).
///
/// # Errors
/// [`ToolError::InvalidArgs`] for arguments that are not the pinned form or name an account
/// that is gone (nothing sent); [`ToolError::Failed`] when no outbox is configured (nothing
/// sent), the server refused (not sent) or the outcome is unknown (maybe sent, never again).
pub async fn execute(
    plugin: &EmailPlugin,
    args: &Value,
    conversation: &str,
) -> Result<ToolOutput, ToolError> {
    let p = pinned_of(args)?;
    let Some(outbox) = plugin.outbox() else {
        return Err(failed(
            NAME,
            "no IRIS_SMTP_URL is configured any more; nothing was sent",
        ));
    };
    let Some(backend) = plugin.backend(&p.account).cloned() else {
        return Err(invalid(
            NAME,
            format!(
                "account `{}` is not configured any more; nothing was sent",
                p.account
            ),
        ));
    };
    if !backend.account().address.eq_ignore_ascii_case(&p.from) {
        return Err(invalid(
            NAME,
            format!(
                "account `{}` now has address `{}`, not the approved sender `{}`; nothing was sent",
                p.account,
                backend.account().address,
                p.from
            ),
        ));
    }
    let domain = p.from.rsplit_once('@').map_or("localhost", |(_, d)| d);
    let message_id = format!("{}@{domain}", uuid::Uuid::new_v4());
    let message = build_message(plugin, &p, &message_id)?;
    let delivery = outbox
        .send(&message)
        .await
        .map_err(|e| e.tool_error(NAME))?;

    let mut result = json!({
        "status": "sent",
        "message_id": message_id,
        "from": p.from,
        "to": p.to,
        "cc": p.cc,
        "subject": p.subject,
    });
    let recipients =
        p.to.iter()
            .chain(&p.cc)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
    match &delivery {
        Delivery::Sent { reply } => {
            result["smtp_reply"] = json!(reply);
            result["summary"] = json!(format!("Sent \"{}\" to {recipients}.", p.subject));
        }
        Delivery::SavedToDemoOutbox { file } => {
            result["status"] = json!("saved_to_demo_outbox");
            result["note"] = json!("saved to the demo outbox, not sent");
            result["file"] = json!(file.display().to_string());
            result["summary"] = json!(format!(
                "\"{}\" to {recipients} was saved to the demo outbox, not sent (the demo has no mail server).",
                p.subject
            ));
        }
    }
    // The mail is out: from here on nothing may fail the call (a failure would read as "not
    // sent"), so a missing copy is reported, never retried and never a second send.
    if !conversation.is_empty() {
        // "Undo that" after this send says a sent mail cannot be unsent (DESIGN §5).
        let what = format!("\"{}\" to {recipients}", p.subject);
        if let Err(e) = plugin
            .store()
            .record_send(conversation, &what, plugin.now())
            .await
        {
            tracing::warn!(error = %e, "recording the send as the conversation's last action failed");
        }
    }
    let raw = message.formatted();
    match backend.append_sent(&raw).await {
        Ok(appended) => {
            result["sent_copy"] = json!({ "folder": appended.folder });
            let account = backend.account().name.clone();
            let stored = match plugin.lock().await {
                Ok(guard) => {
                    let stored = crate::sync::store_appended(
                        plugin.store(),
                        &account,
                        &appended,
                        &raw,
                        plugin.now(),
                    )
                    .await
                    .map_err(|e| e.to_string());
                    guard.release().await;
                    stored
                }
                Err(e) => Err(e),
            };
            if let Err(e) = stored {
                result["sent_copy"]["sync_error"] = json!(format!(
                    "the copy is in {} but the local store could not be updated: {e}",
                    appended.folder
                ));
            }
        }
        Err(e) => {
            result["sent_copy_error"] = json!(format!(
                "the mail went out but no copy could be stored in the Sent folder: {e}"
            ));
        }
    }
    let status = result["status"].clone();
    let items =
        p.to.iter()
            .chain(&p.cc)
            .map(|a| ItemOutcome {
                item: a.clone(),
                outcome: json!({"status": status, "message_id": message_id}),
            })
            .collect();
    Ok(ToolOutput { result, items })
}

#[cfg(test)]
mod tests;
