//! Normalise, one step per rule (see the parent module's docs for the rules): what a call may
//! send is checked and pinned here, before any approval row is written, so a refusal never
//! reaches a card.

use std::collections::HashSet;

use iris_core::plugin::{CallContext, ToolError};
use mail_parser::MessageParser;
use serde_json::{Map, Value};

use super::address::{
    account_list, account_named, address_list, in_request, known_person, parse_address,
};
use super::{
    opt_str, store_err, Pinned, ALLOWED, MAX_BODY_CHARS, MAX_RECIPIENTS, MAX_SUBJECT_CHARS, NAME,
};
use crate::backend::{AccountInfo, MessageRef};
use crate::store::MessageRow;
use crate::tools::{failed, invalid, object};
use crate::EmailPlugin;

/// "Re: " + `subject` unless it already starts with "Re:" (any case).
pub(super) fn re_subject(subject: &str) -> String {
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

/// The original of a reply by its email id: its stored row and, read from the mailbox, the
/// addresses a reply goes to.
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
/// The steps, in the order their refusals are checked: a transport and an account exist, the
/// original of a reply (`original`), the sender (`sender`), the recipients
/// (`recipients`), each recipient known to the owner (`refuse_unknown`), the subject
/// (`subject`), the body (`body`) and the reply's threading (`threading`).
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
    let (account, from) = sender(plugin, obj, &accounts, original.as_ref())?;
    let (to, cc) = recipients(obj, original.as_ref())?;
    refuse_unknown(plugin, ctx, &to, &cc, original.as_ref()).await?;
    let subject = subject(obj, original.as_ref())?;
    let body = body(obj)?;
    let (in_reply_to, references) = threading(original.as_ref());

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

/// The sending account and its address: `from` when given (an account name or address), else
/// the account that received the original of a reply, else the plugin's default sender, else
/// the first account.
fn sender<'a>(
    plugin: &EmailPlugin,
    obj: &Map<String, Value>,
    accounts: &'a [AccountInfo],
    original: Option<&Original>,
) -> Result<(&'a AccountInfo, String), ToolError> {
    let account = if let Some(word) = opt_str(obj, "from")?.filter(|s| !s.trim().is_empty()) {
        account_named(accounts, word).ok_or_else(|| {
            invalid(
                NAME,
                format!(
                    "`from` `{}` names no mail account (accounts: {}); nothing was sent",
                    word.trim(),
                    account_list(accounts)
                ),
            )
        })?
    } else if let Some(o) = original {
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
        account_named(accounts, word).ok_or_else(|| {
            invalid(
                NAME,
                format!(
                    "IRIS_EMAIL_DEFAULT_SENDER `{word}` names no mail account (accounts: {}); nothing was sent",
                    account_list(accounts)
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
    Ok((account, from))
}

/// To and Cc: To as given, else the original's reply addresses; at least one To; a Cc already
/// in To dropped; at most [`MAX_RECIPIENTS`] in all.
fn recipients(
    obj: &Map<String, Value>,
    original: Option<&Original>,
) -> Result<(Vec<String>, Vec<String>), ToolError> {
    let mut to = address_list(obj, "to")?;
    if to.is_empty() {
        if let Some(o) = original {
            to.clone_from(&o.reply_addresses);
        }
    }
    if to.is_empty() {
        return Err(invalid(
            NAME,
            match original {
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
    Ok((to, cc))
}

/// Refuses any recipient who is neither in the owner's request this turn, nor a reply address
/// of the original, nor in their mail (a sender, recipient or cc of a stored message), naming
/// each: IRIS never writes to an address it invented.
async fn refuse_unknown(
    plugin: &EmailPlugin,
    ctx: &CallContext,
    to: &[String],
    cc: &[String],
    original: Option<&Original>,
) -> Result<(), ToolError> {
    let from_original: HashSet<&str> = original
        .iter()
        .flat_map(|o| o.reply_addresses.iter().map(String::as_str))
        .collect();
    let mut unknown = Vec::new();
    for addr in to.iter().chain(cc) {
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
    Ok(())
}

/// The subject: a reply's is "Re: " + (the given one, else the original's), never doubled;
/// otherwise the given one, required. One line, at most [`MAX_SUBJECT_CHARS`].
fn subject(obj: &Map<String, Value>, original: Option<&Original>) -> Result<String, ToolError> {
    let given_subject = opt_str(obj, "subject")?
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let subject = match (original, given_subject) {
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
    Ok(subject)
}

/// The body, with `\r\n` as `\n`: not empty, at most [`MAX_BODY_CHARS`].
fn body(obj: &Map<String, Value>) -> Result<String, ToolError> {
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
    Ok(body)
}

/// A reply's In-Reply-To (the original's Message-ID) and References (the original's, then its
/// Message-ID); none for a new mail.
fn threading(original: Option<&Original>) -> (Option<String>, Vec<String>) {
    match original {
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
    }
}
