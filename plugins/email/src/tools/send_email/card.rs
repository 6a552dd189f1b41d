//! The card of a send: the title names the first recipient, the lines show everything that
//! goes out (From, To, Cc, Subject, the whole body) and the items are the recipients.

use iris_core::plugin::{Description, ToolError};
use serde_json::Value;

use super::address::known_person;
use super::{pinned_of, store_err, CARD_LINE_CHARS};
use crate::EmailPlugin;

/// `s` cut to a card line's length, ending in "…" when it was longer.
fn shorten(s: &str) -> String {
    if s.chars().count() <= CARD_LINE_CHARS {
        s.to_string()
    } else {
        let cut: String = s.chars().take(CARD_LINE_CHARS - 1).collect();
        format!("{cut}…")
    }
}

/// How a recipient shows: its name (for the title) and "Name <address>", or the bare address
/// twice when the store knows no name for it.
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
            lines.push(shorten(&format!(
                "In reply to: {}",
                crate::tools::row_line(&o)
            )));
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
