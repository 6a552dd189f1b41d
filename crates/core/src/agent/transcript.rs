//! Transcript rules of the loop (DESIGN §3 step 4): every tool call id gets exactly one result,
//! and a resumed call's result goes right after the results of its step.

use serde_json::{json, Value};

use crate::model::Message;

/// Whether `call_id` already has a result in `transcript`.
pub fn has_result(transcript: &[Message], call_id: &str) -> bool {
    transcript
        .iter()
        .any(|m| matches!(m, Message::Tool { tool_call_id, .. } if tool_call_id == call_id))
}

/// The observation message for call `id`.
pub fn tool_result(id: &str, content: Value) -> Message {
    Message::Tool {
        tool_call_id: id.to_string(),
        content,
    }
}

/// A tool result is always a JSON object (DESIGN §7): anything else is wrapped as `{"result": v}`.
pub fn as_object(v: Value) -> Value {
    if v.is_object() {
        v
    } else {
        json!({ "result": v })
    }
}

/// Places the paused call's observation right after the results of its step (replacing a
/// placeholder if one is there), so the transcript never has a call without a result.
pub fn place_result(transcript: &mut Vec<Message>, call_id: &str, observation: Value) {
    if let Some(existing) = transcript.iter_mut().find_map(|m| match m {
        Message::Tool {
            tool_call_id,
            content,
        } if tool_call_id == call_id => Some(content),
        _ => None,
    }) {
        *existing = observation;
        return;
    }
    let asked = transcript.iter().position(|m| {
        matches!(m, Message::Assistant { tool_calls, .. } if tool_calls.iter().any(|c| c.id == call_id))
    });
    let at = match asked {
        Some(i) => {
            let mut j = i + 1;
            while j < transcript.len() && matches!(transcript[j], Message::Tool { .. }) {
                j += 1;
            }
            j
        }
        None => transcript.len(),
    };
    transcript.insert(at, tool_result(call_id, observation));
    if at + 1 < transcript.len() {
        // The owner said more while the call was paused; tell the model where the answer is.
        transcript.push(Message::System {
            content: format!("The owner answered the paused call {call_id}; its result is above."),
        });
    }
}

/// The transcript as sent to the model: every call id has exactly one result. A call paused on
/// an approval that is still open gets a "waiting" result in the copy sent (never stored).
pub fn with_all_results(transcript: &[Message]) -> Vec<Message> {
    let answered: std::collections::BTreeSet<&str> = transcript
        .iter()
        .filter_map(|m| match m {
            Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut out = Vec::with_capacity(transcript.len());
    let mut i = 0;
    while i < transcript.len() {
        out.push(transcript[i].clone());
        if let Message::Assistant { tool_calls, .. } = &transcript[i] {
            let mut j = i + 1;
            while j < transcript.len() && matches!(transcript[j], Message::Tool { .. }) {
                out.push(transcript[j].clone());
                j += 1;
            }
            for c in tool_calls
                .iter()
                .filter(|c| !answered.contains(c.id.as_str()))
            {
                out.push(tool_result(
                    &c.id,
                    json!({"status": "waiting", "message": "not run yet: waiting for the owner's answer on this call"}),
                ));
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out
}
