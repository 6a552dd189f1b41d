//! The send: the message built from the pinned arguments only, handed to the outbox once,
//! then the Sent copy stored in the mailbox and the local store, and the result.

use std::str::FromStr;

use iris_core::plugin::{ItemOutcome, ToolError, ToolOutput};
use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::{Address, Message};
use serde_json::{json, Value};

use super::{pinned_of, Pinned, NAME};
use crate::outbox::Delivery;
use crate::tools::{failed, invalid};
use crate::EmailPlugin;

/// The pinned address `addr` (of field `tool_field`) as a mailbox without a name.
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
